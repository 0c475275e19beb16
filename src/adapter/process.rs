//! The adapter process: spawn it, write lines to its stdin, read lines from its stdout within a
//! wall-clock bound, and keep the tail of its stderr for fault reports.
//!
//! On Unix, stdout is read on the calling thread and every wait is a `poll(2)` with the time left
//! (a reader thread would add a thread hand-off to every answer); elsewhere a reader thread feeds
//! a channel read with `recv_timeout`. Either way a process that stops answering cannot block the
//! simulator. A thread keeps the tail of stderr, so a chatty adapter cannot fill that pipe. The
//! wall clock only decides whether an adapter has failed; it never reaches a run, so determinism
//! is unaffected.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{AdapterFault, FaultKind};
use crate::limits::{
    ADAPTER_LINE_BYTES_MAX as LINE_BYTES_MAX,
    ADAPTER_STDERR_TAIL_BYTES_MAX as STDERR_TAIL_BYTES_MAX,
    ADAPTER_STDERR_TAIL_LINES_MAX as STDERR_TAIL_LINES_MAX,
};

const EXIT_WAIT: Duration = Duration::from_millis(1000);

/// Why a line could not be read.
pub enum ReadError {
    Timeout,
    Eof,
    TooLong,
    Failed(String),
}

/// A running adapter process.
pub struct Process {
    child: Child,
    stdin: Option<std::io::BufWriter<ChildStdin>>,
    stdout: Lines,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
}

/// Find `program` as the command line would: a path (with a separator) relative to `cwd`, or a
/// name on `PATH`.
pub fn resolve_program(program: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') || program.contains(std::path::MAIN_SEPARATOR) {
        let p = cwd.join(program);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

impl Process {
    /// Start `command` (program and arguments) in `cwd`.
    pub fn spawn(command: &[String], cwd: &Path) -> Result<Process, String> {
        let (program, args) = command.split_first().ok_or("the command is empty")?;
        let resolved = resolve_program(program, cwd)
            .ok_or_else(|| format!("program `{program}` not found"))?;
        let mut command = Command::new(&resolved);
        command
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own process group: a Ctrl-C at the terminal reaches the whole foreground group, and
        // `wakesim run` stops between seeds on it, so the seed in flight must finish against a
        // live adapter rather than end as an adapter fault. The adapter still ends with us: it
        // reads EOF on its stdin when we exit.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", resolved.display()))?;
        let stdin = child.stdin.take().map(std::io::BufWriter::new);
        let stdout = Lines::new(child.stdout.take().expect("piped stdout"))?;
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = mpsc::channel();
        let sink = Arc::clone(&stderr);
        std::thread::Builder::new()
            .name("wakesim-adapter-stderr".into())
            .spawn(move || {
                keep_tail(stderr_pipe, &sink);
                let _ = done_tx.send(());
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;

        Ok(Process {
            child,
            stdin,
            stdout,
            stderr,
            stderr_done,
        })
    }

    /// Write one line (a newline is added) and flush it.
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let w = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("stdin closed"))?;
        w.write_all(line.as_bytes())?;
        w.write_all(b"\n")?;
        w.flush()
    }

    /// The next line the adapter wrote, waiting at most `bound`.
    pub fn read_line(&mut self, bound: Duration) -> Result<Vec<u8>, ReadError> {
        self.stdout.next(Instant::now() + bound)
    }

    /// Wait a little for a process whose stdout closed to exit; kill it if it does not.
    fn exit_status(&mut self) -> Option<ExitStatus> {
        let deadline = Instant::now() + EXIT_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) => return Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
            }
        }
    }

    /// Stop the process and turn what went wrong into a fault with its stderr tail.
    pub fn into_fault(mut self, kind: FaultKind, detail: String) -> AdapterFault {
        self.stdin = None;
        let detail = if kind == FaultKind::Exited {
            match self.exit_status() {
                Some(s) => format!("{detail} (it exited: {s})"),
                None => format!("{detail} (it closed its stdout but kept running; killed)"),
            }
        } else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            detail
        };
        let _ = self.stderr_done.recv_timeout(EXIT_WAIT);
        let tail = self.stderr_tail();
        AdapterFault {
            kind,
            detail,
            stderr_tail: tail,
        }
    }

    /// The last lines of what the adapter wrote to stderr so far.
    pub fn stderr_tail(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let from = lines.len().saturating_sub(STDERR_TAIL_LINES_MAX);
        lines[from..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stdin = None;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Lines from the adapter's stdout.
#[cfg(unix)]
struct Lines {
    pipe: ChildStdout,
    buf: Vec<u8>,
    /// Bytes of `buf` already handed out.
    pos: usize,
}

#[cfg(unix)]
impl Lines {
    fn new(pipe: ChildStdout) -> Result<Lines, String> {
        Ok(Lines {
            pipe,
            buf: Vec::with_capacity(1 << 16),
            pos: 0,
        })
    }

    /// The next line, waiting until `deadline` at most.
    fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut chunk = [0u8; 1 << 14];
        loop {
            if let Some(i) = self.buf[self.pos..].iter().position(|&b| b == b'\n') {
                let line = self.buf[self.pos..self.pos + i].to_vec();
                self.pos += i + 1;
                if self.pos == self.buf.len() {
                    self.buf.clear();
                    self.pos = 0;
                }
                return Ok(line);
            }
            if self.buf.len() - self.pos > LINE_BYTES_MAX {
                return Err(ReadError::TooLong);
            }
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            let timeout = Timespec {
                tv_sec: left.as_secs() as _,
                tv_nsec: left.subsec_nanos() as _,
            };
            let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(ReadError::Failed(e.to_string())),
            }
            match self.pipe.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Eof),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Failed(e.to_string())),
            }
        }
    }
}

/// Lines from the adapter's stdout, through a reader thread (no `poll` here).
#[cfg(not(unix))]
struct Lines {
    rx: Receiver<Result<Vec<u8>, ReadError>>,
}

#[cfg(not(unix))]
impl Lines {
    fn new(pipe: ChildStdout) -> Result<Lines, String> {
        use std::io::BufRead;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("wakesim-adapter-stdout".into())
            .spawn(move || {
                let mut r = std::io::BufReader::new(pipe.take(u64::MAX));
                loop {
                    let mut line = Vec::new();
                    let limited = (&mut r)
                        .take(LINE_BYTES_MAX as u64 + 1)
                        .read_until(b'\n', &mut line);
                    let msg = match limited {
                        Ok(0) => Err(ReadError::Eof),
                        Ok(_) if line.last() == Some(&b'\n') => {
                            line.pop();
                            Ok(line)
                        }
                        Ok(_) if line.len() > LINE_BYTES_MAX => Err(ReadError::TooLong),
                        Ok(_) => Err(ReadError::Eof),
                        Err(e) => Err(ReadError::Failed(e.to_string())),
                    };
                    let stop = msg.is_err();
                    if tx.send(msg).is_err() || stop {
                        return;
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        Ok(Lines { rx })
    }

    fn next(&mut self, deadline: Instant) -> Result<Vec<u8>, ReadError> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => Err(ReadError::Timeout),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(ReadError::Eof),
        }
    }
}

/// The stderr reader: keep the last few KiB, so a chatty adapter cannot fill the pipe and block.
fn keep_tail(mut stderr: impl Read, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                let Ok(mut tail) = sink.lock() else { return };
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL_BYTES_MAX {
                    let cut = tail.len() - STDERR_TAIL_BYTES_MAX;
                    tail.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
