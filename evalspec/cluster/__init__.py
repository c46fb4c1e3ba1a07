"""Work that outgrows one machine: sandboxed programs and validation shards on a Ray
cluster (the optional ``ray`` extra, imported only when asked for)."""
