//! The adapter process: spawn it, write lines to its stdin, read lines from its stdout within a
//! wall-clock bound, and keep the tail of its stderr for fault reports.
//!
//! Two threads per process read its stdout and stderr, so a process that stops answering can
//! never block the simulator: every wait is a `recv_timeout`. Wall-clock time only decides
//! whether an adapter has failed; it never reaches a run, so determinism is unaffected.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{AdapterFault, FaultKind};

/// Longest line an adapter may write; a longer one is a protocol fault, not an allocation.
pub const LINE_BYTES_MAX: usize = 1 << 20;
/// How much of the adapter's stderr a fault report keeps.
const STDERR_TAIL_BYTES_MAX: usize = 4096;
const STDERR_TAIL_LINES_MAX: usize = 20;
/// How long to wait for a process that closed its stdout to exit, and for its stderr to drain.
const EXIT_WAIT: Duration = Duration::from_millis(1000);

enum Chunk {
    Lines(Vec<Vec<u8>>),
    Eof,
    TooLong,
    Failed(String),
}

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
    stdin: Option<BufWriter<ChildStdin>>,
    chunks: Receiver<Chunk>,
    lines: VecDeque<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stderr_done: Receiver<()>,
    timeout: Duration,
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
    pub fn spawn(command: &[String], cwd: &Path, timeout: Duration) -> Result<Process, String> {
        let (program, args) = command.split_first().ok_or("the command is empty")?;
        let resolved = resolve_program(program, cwd)
            .ok_or_else(|| format!("program `{program}` not found"))?;
        let mut child = Command::new(&resolved)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", resolved.display()))?;
        let stdin = child.stdin.take().map(BufWriter::new);
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");

        let (tx, chunks) = mpsc::channel();
        std::thread::Builder::new()
            .name("wakesim-adapter-stdout".into())
            .spawn(move || read_lines(stdout, tx))
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;

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
            chunks,
            lines: VecDeque::new(),
            stderr,
            stderr_done,
            timeout,
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

    /// The next line the adapter wrote, waiting at most the wall-clock bound.
    pub fn read_line(&mut self) -> Result<Vec<u8>, ReadError> {
        if let Some(l) = self.lines.pop_front() {
            return Ok(l);
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(Chunk::Lines(v)) => {
                    self.lines.extend(v);
                    if let Some(l) = self.lines.pop_front() {
                        return Ok(l);
                    }
                }
                Ok(Chunk::Eof) | Err(RecvTimeoutError::Disconnected) => return Err(ReadError::Eof),
                Ok(Chunk::TooLong) => return Err(ReadError::TooLong),
                Ok(Chunk::Failed(e)) => return Err(ReadError::Failed(e)),
                Err(RecvTimeoutError::Timeout) => return Err(ReadError::Timeout),
            }
        }
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
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

/// The stdout reader: split what arrives into lines and hand them over in batches.
fn read_lines(stdout: impl Read, tx: mpsc::Sender<Chunk>) {
    let mut r = BufReader::with_capacity(1 << 16, stdout);
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Chunk::Failed(e.to_string()));
                return;
            }
        };
        if buf.is_empty() {
            let _ = tx.send(Chunk::Eof);
            return;
        }
        let n = buf.len();
        let mut lines = Vec::new();
        let mut start = 0;
        while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + i;
            if partial.is_empty() {
                lines.push(buf[start..end].to_vec());
            } else {
                partial.extend_from_slice(&buf[start..end]);
                lines.push(std::mem::take(&mut partial));
            }
            start = end + 1;
        }
        partial.extend_from_slice(&buf[start..]);
        r.consume(n);
        let too_long = partial.len() > LINE_BYTES_MAX || lines.iter().any(|l| l.len() > LINE_BYTES_MAX);
        if !lines.is_empty() && tx.send(Chunk::Lines(lines)).is_err() {
            return;
        }
        if too_long {
            let _ = tx.send(Chunk::TooLong);
            return;
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
