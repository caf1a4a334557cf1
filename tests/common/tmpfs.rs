//! A small tmpfs for tests of a full disk: mounted on a temporary directory (the tests run as
//! root, as on CI; a failed mount fails the test loudly), resized in place, unmounted on drop.

use std::path::Path;
use std::process::Command;

/// A mounted tmpfs.
pub struct Tmpfs {
    dir: tempfile::TempDir,
}

fn mount(args: &[&str], target: &Path) {
    let out = Command::new("mount")
        .args(args)
        .arg(target)
        .output()
        .unwrap_or_else(|e| panic!("running mount: {e}"));
    assert!(
        out.status.success(),
        "mount {args:?} {} failed (the test needs root): {}",
        target.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (such as `24m`).
    pub fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        mount(
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"],
            dir.path(),
        );
        Tmpfs { dir }
    }

    /// The mount point.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Changes the size (`mount -o remount,size=…`), keeping the files.
    pub fn resize(&self, size: &str) {
        mount(&["-o", &format!("remount,size={size}")], self.path());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}
