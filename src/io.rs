//! Files wakesim reads and writes.
//!
//! Reading ([`read_text`]) opens without blocking and refuses what is not a regular file (a
//! directory, a FIFO that would block forever, a device), a file past a size bound, and bytes
//! that are not UTF-8, each with a sentence saying which.
//!
//! Files wakesim writes are written so that a crash, a kill or a full disk never leaves a torn file
//! and never replaces one: the text goes to a temporary file in the same directory, is synced to
//! disk, and is then linked under its name only if that name is free (`link(2)` fails on an
//! existing name, atomically). A reader sees either no file or the whole file.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Write `bytes` as the new file `path`, atomically; `AlreadyExists` if `path` exists.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = temp_path(path);
    let result = write_synced(&tmp, bytes).and_then(|()| publish(&tmp, path));
    let _ = std::fs::remove_file(&tmp);
    result?;
    sync_dir(path);
    Ok(())
}

/// `.NAME.wakesim-tmp-PID` beside `path`: the same file system (so linking is atomic), a
/// name no scenario discovery picks up (it does not end in `.toml`).
fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or("file".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.wakesim-tmp-{}", std::process::id()))
}

fn write_synced(tmp: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Give the complete temporary file its name, unless the name is taken.
fn publish(tmp: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(tmp, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        // A file system without hard links: check, then rename (a narrow race, never a torn
        // file).
        Err(_) if path.exists() => Err(std::io::ErrorKind::AlreadyExists.into()),
        Err(_) => std::fs::rename(tmp, path),
    }
}

/// Make the new name itself durable (best effort: not every platform can sync a directory).
fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// The text of the regular file `path`, at most `max` bytes. Errors are `std::io::Error`s whose
/// message says what the file is instead (the caller adds the path).
pub fn read_text(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::{Error, Read};
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading blocks until a writer comes; non-blocking, it returns at
        // once and the check below refuses it.
        opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let f = opts.open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(Error::other(format!(
            "not a regular file ({})",
            kind(&meta)
        )));
    }
    if meta.len() > max {
        return Err(Error::other(format!(
            "{} bytes, more than the {max} wakesim reads",
            meta.len()
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(Error::other(format!(
            "more than the {max} bytes wakesim reads"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::other(format!(
            "not UTF-8 text (an invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// `create_dir_all`, with the cause named when a component of `dir` exists but is not a
/// directory (the system says only "File exists"): "`/dev/full` is not a directory (a device)".
pub fn create_dirs(dir: &Path) -> std::io::Result<()> {
    match std::fs::create_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) => {
            let blocker = dir.ancestors().find(|a| {
                !a.as_os_str().is_empty() && std::fs::metadata(a).is_ok_and(|m| !m.is_dir())
            });
            match blocker {
                Some(b) => {
                    let what = std::fs::metadata(b).map_or("not a directory", |m| kind(&m));
                    Err(std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        format!("`{}` is not a directory ({what})", b.display()),
                    ))
                }
                None => Err(e),
            }
        }
    }
}

/// Temporary files of [`write_new`] in `dir` whose writer is gone (killed half-way): their
/// process no longer runs. They hold no complete file; removing them loses nothing.
pub fn stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name.strip_prefix('.')?.rsplit_once(".wakesim-tmp-")?.1;
            let pid: u32 = pid.parse().ok()?;
            (!process_alive(pid)).then(|| e.path())
        })
        .collect();
    out.sort();
    out
}

/// Does process `pid` run (on Linux, per `/proc`; elsewhere assumed to, so nothing is removed)?
fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// What a file that is not a regular file is, for a message.
fn kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else if meta.is_file() {
        "a file"
    } else {
        "not a file"
    }
}
