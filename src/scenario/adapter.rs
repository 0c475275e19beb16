//! `wake` as a table: an external wake logic's adapter process (`docs/protocol.md`).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use crate::adapter::AdapterSpec;
use crate::adapter::process::resolve_program;
use crate::error::{Error, Result};
use crate::limits::{
    ADAPTER_CONSTANTS_MAX as CONSTANTS_MAX,
    ADAPTER_START_TIMEOUT_MS_DEFAULT as START_TIMEOUT_MS_DEFAULT,
    ADAPTER_TIMEOUT_MS_DEFAULT as TIMEOUT_MS_DEFAULT, ADAPTER_TIMEOUT_MS_MAX as TIMEOUT_MS_MAX,
    DURATION_MS_MAX,
};

/// `wake`: a registered name, or a table naming an external adapter.
pub(super) enum WakeValue {
    Name(String),
    External(Box<RawExternal>),
}

impl<'de> Deserialize<'de> for WakeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WakeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a wake logic's name or a table { command = [...] }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<WakeValue, E> {
                Ok(WakeValue::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<WakeValue, A::Error> {
                RawExternal::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|x| WakeValue::External(Box::new(x)))
            }
        }
        d.deserialize_any(V)
    }
}

/// `wake = { command = [...], cwd = "..", name = "..", constants_ms = [..], timeout_ms = n,
/// start_timeout_ms = n, options = { .. } }`: an adapter process speaking `docs/protocol.md`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExternal {
    command: Spanned<Vec<String>>,
    /// The adapter's working directory, relative to the scenario file's directory (default: that
    /// directory). The program and its arguments are taken relative to it.
    #[serde(default)]
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    constants_ms: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    start_timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    options: Option<toml::Table>,
}

impl RawExternal {
    pub(super) fn validate(
        &self,
        path: &Path,
        origin: (PathBuf, usize, usize),
        err: &dyn Fn(std::ops::Range<usize>, String) -> Error,
    ) -> Result<AdapterSpec> {
        let command = self.command.get_ref().clone();
        let Some(program) = command.first() else {
            return Err(err(
                self.command.span(),
                "the command is empty: give the program and its arguments".to_string(),
            ));
        };
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let cwd = match &self.cwd {
            Some(c) => {
                let cwd = dir.join(c.get_ref());
                if !cwd.is_dir() {
                    return Err(err(
                        c.span(),
                        format!("`{}` is not a directory", cwd.display()),
                    ));
                }
                cwd
            }
            None => dir,
        };
        if resolve_program(program, &cwd).is_none() {
            let where_ = if program.contains('/') {
                format!("in `{}`", cwd.display())
            } else {
                "on PATH".to_string()
            };
            return Err(err(
                self.command.span(),
                format!("program `{program}` not found {where_}"),
            ));
        }
        let bound = |t: &Option<Spanned<u64>>, default: u64| match t {
            Some(t) => {
                let v = *t.get_ref();
                if v == 0 || v > TIMEOUT_MS_MAX {
                    return Err(err(
                        t.span(),
                        format!("{v} is out of range 1..={TIMEOUT_MS_MAX}"),
                    ));
                }
                Ok(v)
            }
            None => Ok(default),
        };
        let timeout_ms = bound(&self.timeout_ms, TIMEOUT_MS_DEFAULT)?;
        let start_timeout_ms = bound(&self.start_timeout_ms, START_TIMEOUT_MS_DEFAULT)?;
        let constants_ms = match &self.constants_ms {
            Some(c) => {
                let v = c.get_ref();
                if v.len() > CONSTANTS_MAX || v.iter().any(|&ms| ms > DURATION_MS_MAX) {
                    return Err(err(
                        c.span(),
                        format!(
                            "at most {CONSTANTS_MAX} constants, each at most {DURATION_MS_MAX} ms"
                        ),
                    ));
                }
                v.clone()
            }
            None => Vec::new(),
        };
        let options = match &self.options {
            Some(t) => serde_json::to_value(t).unwrap_or_default(),
            None => serde_json::Value::Object(Default::default()),
        };
        Ok(AdapterSpec {
            command,
            cwd,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            options,
            origin,
        })
    }
}
