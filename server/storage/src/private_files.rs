//! Directories and files only their owner may use: the data directory, the store (every
//! object, Secrets included) and the keys, as etcd keeps its data directory (0700).

use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents readable by the owner only (0700); a directory that
/// exists keeps its mode.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Sets `path`'s permission bits to `mode` (Unix; elsewhere nothing).
pub fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}
