//! One error type for the crate. Messages are lower-case and chained with `: `. Every error maps to
//! exit code 2 (usage or input); a run that completes maps to 0 or 1 by its verdicts.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum Error {
    /// A scenario file that does not parse or validate: file, line, column, key, message.
    Scenario {
        file: PathBuf,
        line: usize,
        column: usize,
        key: Option<String>,
        message: String,
    },
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    Usage(String),
}

impl Error {
    pub fn exit_code(&self) -> i32 {
        2
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Scenario {
                file,
                line,
                column,
                key,
                message,
            } => {
                write!(f, "{}:{line}:{column}: ", file.display())?;
                if let Some(key) = key {
                    write!(f, "{key}: ")?;
                }
                f.write_str(message)
            }
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Usage(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
