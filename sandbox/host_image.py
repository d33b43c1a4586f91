"""A small base image made offline from this host's own programs (bash, coreutils, grep, sed and their shared
libraries, and the rest of libc6's libraries a Debian image has: what the claude CLI's native binary loads),
imported into the container engine as `localhost/sm-harbor-base` (and `:<content hash>`, so a
changed root is imported again).

For machines that reach no image registry (CI, this project's tests, a try-out of the example Harbor suite):
task Dockerfiles say `FROM localhost/sm-harbor-base`. Real benchmark tasks pull their own base images instead.
Run `python -m sandbox.host_image` to make it; it is rebuilt only when missing.
"""

from __future__ import annotations

import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from sandbox import SandboxError
from sandbox.container import ContainerEngine, get_engine

BASE_TAG = "localhost/sm-harbor-base"
PROGRAMS = ("bash", "sh", "dash", "cat", "cp", "ls", "mkdir", "rm", "mv", "grep", "sed", "head", "tail", "wc",
            "sort", "tr", "cut", "touch", "test", "env", "printf", "echo", "true", "false", "diff", "chmod")
LIBRARY = re.compile(r"(/\S+\.so[.\d]*)")
# libc6's other libraries, which every Debian-based image has beside libc (librt: the claude CLI needs it)
LIBC_SIBLINGS = ("librt.so.1", "libpthread.so.0", "libdl.so.2", "libm.so.6", "libresolv.so.2", "libutil.so.1")


def _libraries(binary: Path) -> set[Path]:
    done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    return {Path(m) for m in LIBRARY.findall(done.stdout)} if done.returncode == 0 else set()


def rootfs_tar(programs: tuple[str, ...] = PROGRAMS) -> bytes:
    """A tar of a minimal root: each program found on PATH at /usr/bin/<name>,
    its libraries at their paths."""
    files: dict[str, Path] = {}
    for name in programs:
        found = shutil.which(name)
        if found is None:
            continue
        real = Path(found).resolve()
        files[f"usr/bin/{name}"] = real
        for lib in _libraries(real):
            files[str(lib).lstrip("/")] = lib.resolve()
            for sibling in (lib.parent / name for name in LIBC_SIBLINGS if lib.name == "libc.so.6"):
                if sibling.exists():
                    files[str(sibling).lstrip("/")] = sibling.resolve()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in ("usr/bin", "tmp", "etc", "app", "root"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        link = tarfile.TarInfo("bin")
        link.type, link.linkname = tarfile.SYMTYPE, "usr/bin"
        tar.addfile(link)
        for arcname, source in sorted(files.items()):
            if Path("/" + arcname.split("/")[0]).is_symlink():
                arcname = "usr/" + arcname   # a merged-/usr host: /lib is /usr/lib, /lib64 is /usr/lib64
            tar.add(str(source), arcname=arcname)
        for alias in ("lib", "lib64"):
            if any(name.startswith(f"usr/{alias}/") for name in tar.getnames()):
                link = tarfile.TarInfo(alias)
                link.type, link.linkname = tarfile.SYMTYPE, f"usr/{alias}"
                tar.addfile(link)
    return buffer.getvalue()


def ensure_base_image(engine: ContainerEngine, tag: str = BASE_TAG) -> str:
    """The base image, imported from the host's programs when the engine does not have this root yet."""
    root = rootfs_tar()
    exact = f"{tag}:{hashlib.sha256(root).hexdigest()[:16]}"
    if engine.has_image(exact):
        return tag
    done = subprocess.run(engine.argv("import", "-", exact), input=root, capture_output=True)
    if done.returncode == 0:
        done = subprocess.run(engine.argv("tag", exact, tag), capture_output=True)
    if done.returncode != 0:
        raise SandboxError(f"importing {tag} failed: {done.stderr.decode('utf-8', 'replace')[-1000:]}")
    return tag


if __name__ == "__main__":
    print(ensure_base_image(get_engine(sys.argv[1] if len(sys.argv) > 1 else "auto")))
