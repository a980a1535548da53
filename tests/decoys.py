"""Hostile paths for the clients' file operations (memnest-ctl, the hooks, the workbench), and
the proof that a call left them as they were: every decoy's lstat (mode, owner, times, size)
and listing, recorded before and compared after.

The decoys, under the test's own folder: an ordinary file (0644) and folder (0755) outside any
.memnest/, a folder of another user (uid 65534, when the tests run as root), a link to the
folder and one to the file, and a project folder standing for the workspace root. `/etc` and
`/etc/passwd` are only looked at.
"""
import os
import stat
from pathlib import Path

OTHER_UID = 65534  # nobody


class Decoys:
    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.file = root / "notes.txt"
        self.file.write_text("the user's own file\n")
        self.folder = root / "folder"
        self.folder.mkdir()
        (self.folder / "kept.txt").write_text("kept\n")
        self.others = root / "others"
        self.others.mkdir()
        (self.others / "theirs.txt").write_text("theirs\n")
        self.link = root / "link-to-folder"
        self.link.symlink_to(self.folder)
        self.file_link = root / "link-to-file"
        self.file_link.symlink_to(self.file)
        self.project = root / "project"
        self.project.mkdir()
        (self.project / "README.md").write_text("a project\n")
        for path, mode in ((self.file, 0o644), (self.folder, 0o755), (self.others, 0o755),
                           (self.project, 0o755)):
            os.chmod(path, mode)
        self.other_user = os.getuid() == 0
        if self.other_user:
            for path in (self.others, self.others / "theirs.txt"):
                os.chown(path, OTHER_UID, OTHER_UID)
        self.before = self.snapshot()

    def paths(self) -> list[Path]:
        """The decoys whose lstat and listing must not change."""
        return [self.root, self.file, self.folder, self.others, self.link, self.file_link,
                self.project]

    def hostile(self) -> dict[str, Path]:
        """The paths a test hands a command, by name."""
        return {"file": self.file, "folder": self.folder, "others": self.others,
                "root": Path("/"), "link": self.link, "file-link": self.file_link,
                "project": self.project}

    def snapshot(self) -> dict[str, object]:
        seen: dict[str, object] = {}
        for path in self.paths():
            seen[str(path)] = _facts(path)
            if path.is_dir() and not path.is_symlink():
                for entry in sorted(os.listdir(path)):
                    seen[str(path / entry)] = _facts(path / entry)
        # The rest of the machine changes /'s and /etc's times: their entries and modes only.
        seen["/ lists"] = sorted(os.listdir("/"))
        seen["/etc, /etc/passwd"] = [(stat.S_IMODE(os.lstat(p).st_mode), os.lstat(p).st_uid)
                                     for p in ("/", "/etc", "/etc/passwd")]
        return seen

    def assert_untouched(self) -> None:
        now = self.snapshot()
        changed = {p: (self.before.get(p), now.get(p)) for p in set(self.before) | set(now)
                   if self.before.get(p) != now.get(p)}
        assert not changed, f"decoys changed: {changed}"
        assert stat.S_IMODE(os.stat("/etc").st_mode) == 0o755
        assert stat.S_IMODE(os.stat("/etc/passwd").st_mode) == 0o644


def _facts(path: Path) -> tuple[int, ...]:
    info = os.lstat(path)
    return (info.st_mode, info.st_uid, info.st_gid, info.st_size, info.st_mtime_ns,
            info.st_ctime_ns, info.st_ino)
