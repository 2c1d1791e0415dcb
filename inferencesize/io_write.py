"""Writing the files a command produces, so that no user file is ever lost.

Every file a command writes (``sweep --out``, ``simulate --requests-out``, ``plan --plot``,
``frontier --plot``, ``calibrate --out``, ``catalog import-hf --out``) goes through
:func:`atomic_file`:

* the target is checked first (:func:`check_target`): not one of the command's own inputs
  (same path or same inode), not a directory, device, FIFO or socket, a file name the file
  system can hold, a folder the user may write in, and (where the command does not replace
  files) not an existing file;
* the data goes to a temporary file with an unpredictable name (:mod:`tempfile`) in the target's
  folder, is flushed and synced to disk, takes the permissions of the file it replaces (or the
  umask's for a new file) and is renamed over the target in one step: the target is either the
  old file or the complete new one, never a partial file;
* the temporary file is removed on any error (a full disk, a killed process): SIGTERM and
  SIGHUP are turned into :class:`SystemExit` (status 128 + signal) while a file is being
  written, so clean-up runs, and Ctrl-C already raises :class:`KeyboardInterrupt`.

A target that is a symbolic link is written through: the link stays, the file it points to is
replaced. Errors are :class:`~inferencesize.errors.InputError` (exit 1) naming the flag, the
path and the operating system's reason.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from types import FrameType
from typing import IO, Any

from inferencesize.errors import InputError

#: Longest file name (bytes) where the file system does not say (Linux, macOS, Windows: 255).
NAME_MAX = 255
#: Bytes of the target's name kept in its temporary file's name (which adds ~14 bytes).
TEMP_NAME_BYTES = 100
#: Signals that end a command while it writes a file: the temporary file is removed first
#: (their default action would end the process without it).
STOP_SIGNALS = ("SIGTERM", "SIGHUP")

#: A command's input: (what names it, e.g. "--data" or "SCENARIO"; its path).
Input = tuple[str, Path]


def _numbers(names: Iterable[str]) -> list[int]:
    return [n for n in (getattr(signal, name, None) for name in names) if n is not None]


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def signals_raise() -> Iterator[None]:
    """While the body runs, SIGTERM and SIGHUP raise ``SystemExit(128 + signal)`` in the main
    thread, so ``finally`` clauses run (and the exit status is the shell's for that signal).
    A signal the process ignores (``nohup``) or handles itself is left alone; elsewhere than
    the main thread (signals cannot be set there) the body runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        number: signal.signal(number, _stop)
        for number in _numbers(STOP_SIGNALS)
        if signal.getsignal(number) == signal.SIG_DFL  # an ignored SIGHUP (nohup) stays so
    }
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold Ctrl-C, SIGTERM and SIGHUP for a few system calls that must not be split (create
    a file and remember its name; rename and forget it); a held signal arrives afterwards."""
    can = (
        hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    )
    if not can:
        yield
        return
    held = set(_numbers(("SIGINT", *STOP_SIGNALS)))
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError, AttributeError):
        return NAME_MAX


def _unwritable_reason(folder: Path) -> str:
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only = False
    return os.strerror(errno.EROFS if read_only else errno.EACCES)


def _existing_folder(folder: Path) -> Path:
    """``folder`` or its nearest ancestor that exists."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def check_target(
    path: Path,
    flag: str,
    *,
    inputs: Iterable[Input] = (),
    overwrite: bool = True,
    make_folders: bool = False,
) -> Path:
    """The file to write for ``flag path`` (symbolic links followed), or an InputError.

    Refused: a file name longer than the file system allows; a target that is one of
    ``inputs`` (same path or same file: a hard link, a symbolic link); an existing target that
    is not a regular file (a directory, a device such as /dev/null, a FIFO, a socket); an
    existing regular file unless ``overwrite``; a folder that does not exist (unless
    ``make_folders``) or that the user cannot write in.
    """
    shown = f"{flag} {path}"
    name = path.name
    if not name or name in (".", ".."):
        raise InputError(f"{shown}: expected a file name, not a directory")
    real = Path(os.path.realpath(path))
    folder = real.parent
    limit = _name_max(_existing_folder(folder))
    size = len(os.fsencode(real.name))
    if size > limit or len(os.fsencode(name)) > limit:
        raise InputError(
            f"{shown}: {os.strerror(errno.ENAMETOOLONG)}"
            f" ({max(size, len(os.fsencode(name)))} bytes; at most {limit})"
        )
    try:
        info: os.stat_result | None = os.stat(real)
    except FileNotFoundError:
        info = None
    except OSError as err:
        raise InputError(f"{shown}: {err.strerror}") from None
    if info is not None:
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{shown}: is {_kind(info.st_mode)}; expected a file name")
        for label, source in inputs:
            try:
                same = os.path.samefile(real, source)
            except OSError:
                same = False
            if same:
                raise InputError(
                    f"{shown}: would overwrite its own input ({label} {source});"
                    " choose another file name"
                )
        if not overwrite:
            raise InputError(
                f"{shown}: already exists; pass --force to replace it, or choose another name"
            )
    if not folder.is_dir():
        if not make_folders:
            where = path.parent if str(path.parent) else Path(".")
            raise InputError(f"{shown}: directory {where} does not exist")
        folder = _existing_folder(folder)
        if not folder.is_dir():
            raise InputError(f"{shown}: {folder} is not a directory")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{shown}: cannot write in {folder} ({_unwritable_reason(folder)})")
    return real


def _new_file_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _temp_prefix(name: str) -> str:
    return "." + os.fsdecode(os.fsencode(name)[:TEMP_NAME_BYTES]) + "."


def _remove(tmp: str) -> None:
    with _signals_held(), suppress(OSError):
        os.unlink(tmp)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable (best effort: not every system can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_error(flag: str, path: Path, err: OSError) -> InputError:
    reason = err.strerror or str(err)
    return InputError(f"{flag} {path}: cannot write ({reason})")


@contextmanager
def atomic_file(
    path: Path,
    flag: str,
    *,
    binary: bool = False,
    inputs: Iterable[Input] = (),
    overwrite: bool = True,
    make_folders: bool = False,
) -> Iterator[IO[Any]]:
    """A file object whose content becomes ``path`` when the body ends without an error.

    Text is UTF-8 with ``\\n`` line ends (``binary``: bytes). On an error, Ctrl-C, SIGTERM
    or SIGHUP the temporary file is removed and ``path`` is as it was. ``inputs``,
    ``overwrite`` and ``make_folders``: see :func:`check_target`.
    """
    inputs = list(inputs)
    real = check_target(path, flag, inputs=inputs, overwrite=overwrite, make_folders=make_folders)
    tmp: str | None = None
    with signals_raise():
        try:
            try:
                if make_folders:
                    real.parent.mkdir(parents=True, exist_ok=True)
                with _signals_held():
                    fd, tmp = tempfile.mkstemp(
                        dir=real.parent, prefix=_temp_prefix(real.name), suffix=".tmp"
                    )
            except OSError as err:
                raise _write_error(flag, path, err) from None
            try:
                if binary:
                    fh: IO[Any] = os.fdopen(fd, "wb")
                else:
                    fh = os.fdopen(fd, "w", encoding="utf-8", newline="")
            except BaseException:
                os.close(fd)
                raise
            with fh:
                try:
                    yield fh
                except OSError as err:  # a write of the body: a full disk, a quota
                    raise _write_error(flag, path, err) from None
                try:
                    fh.flush()
                    os.fsync(fh.fileno())
                except OSError as err:
                    raise _write_error(flag, path, err) from None
            _commit(tmp, real, path, flag, inputs, overwrite)
            tmp = None
            _sync_folder(real.parent)
        except OSError as err:  # closing the file (its last bytes) failed
            raise _write_error(flag, path, err) from None
        finally:
            if tmp is not None:
                _remove(tmp)


def _commit(
    tmp: str, real: Path, path: Path, flag: str, inputs: list[Input], overwrite: bool
) -> None:
    """Give ``tmp`` the replaced file's permissions and rename it to ``real`` (rechecked:
    the target may have changed while the command ran)."""
    check_target(path, flag, inputs=inputs, overwrite=overwrite)
    try:
        old: os.stat_result | None = os.stat(real)
    except FileNotFoundError:
        old = None
    try:
        os.chmod(tmp, stat.S_IMODE(old.st_mode) if old is not None else _new_file_mode())
        if old is not None and (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
            with suppress(OSError):  # as root: keep the owner of the file replaced
                os.chown(tmp, old.st_uid, old.st_gid)
        with _signals_held():
            if overwrite:
                os.replace(tmp, real)
            else:  # never over a file that appeared meanwhile
                _link_new(tmp, real)
    except FileExistsError:
        raise InputError(
            f"{flag} {path}: already exists; pass --force to replace it, or choose another name"
        ) from None
    except OSError as err:
        raise _write_error(flag, path, err) from None


def _link_new(tmp: str, real: Path) -> None:
    """Rename ``tmp`` to ``real`` unless ``real`` exists (FileExistsError): a hard link, then
    the temporary name removed; where the file system has no hard links, a checked rename."""
    try:
        os.link(tmp, real)
    except FileExistsError:
        raise
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        if real.exists():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(real)) from None
        os.replace(tmp, real)
        return
    os.unlink(tmp)


def write_atomic(
    path: Path,
    data: str | bytes,
    flag: str,
    *,
    inputs: Iterable[Input] = (),
    overwrite: bool = True,
    make_folders: bool = False,
) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` with :func:`atomic_file`."""
    with atomic_file(
        path,
        flag,
        binary=isinstance(data, bytes),
        inputs=inputs,
        overwrite=overwrite,
        make_folders=make_folders,
    ) as fh:
        fh.write(data)
