"""Resource limits for one sandboxed program."""

from __future__ import annotations

import attrs

MiB = 1024 * 1024


def _positive_int(_inst: object, attribute: attrs.Attribute[int], value: int) -> None:
    if type(value) is not int or value <= 0:
        msg = f"{attribute.name} must be a positive integer, got {value!r}"
        raise ValueError(msg)


def _positive_number(_inst: object, attribute: attrs.Attribute[float], value: float) -> None:
    if type(value) not in (int, float) or not value > 0 or value == float("inf"):
        msg = f"{attribute.name} must be a positive finite number, got {value!r}"
        raise ValueError(msg)


@attrs.frozen
class Limits:
    """Per-program limits; every one is enforced by the kernel or the harness.

    ``cpu_seconds`` is RLIMIT_CPU (SIGXCPU at the limit, SIGKILL one second
    later), ``wall_seconds`` the harness's clock after which the whole process
    group (and namespace) is killed, ``memory_bytes`` RLIMIT_AS (address space,
    so thread stacks and arenas count; where the harness can make a cgroup
    per run, ``memory_bytes + disk_bytes`` also bounds the whole run's
    resident memory), ``file_size_bytes`` RLIMIT_FSIZE,
    ``open_files`` RLIMIT_NOFILE, ``processes`` RLIMIT_NPROC on top of what the
    sandbox uid already runs (it binds only for a non-root uid; when the
    harness is root each run has a uid of its own, so it is the run's own
    budget, and a pids cgroup where one can be made), ``output_bytes`` the
    bytes kept of each of stdout and stderr,
    and ``disk_bytes`` the size of the one tmpfs that holds everything the
    program can write in the namespace tier (its working directory, /tmp and
    /dev/shm together; below that tier only RLIMIT_FSIZE bounds a file).
    """

    cpu_seconds: int = attrs.field(default=5, validator=_positive_int)
    wall_seconds: float = attrs.field(default=10.0, validator=_positive_number)
    memory_bytes: int = attrs.field(default=512 * MiB, validator=_positive_int)
    file_size_bytes: int = attrs.field(default=16 * MiB, validator=_positive_int)
    open_files: int = attrs.field(default=64, validator=_positive_int)
    processes: int = attrs.field(default=64, validator=_positive_int)
    output_bytes: int = attrs.field(default=64 * 1024, validator=_positive_int)
    disk_bytes: int = attrs.field(default=128 * MiB, validator=_positive_int)
