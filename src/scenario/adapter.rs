//! `wake` as a table: an external wake logic's adapter process (`docs/protocol.md`), or the
//! extension a real host loads itself (`remote.rs`). One table type serves both, read straight
//! from the document, so every error keeps its span.

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

/// `wake`: a registered name, a table naming an external adapter (`command`), or a table naming
/// the extension a real host loads (`extension`).
pub(super) enum WakeValue {
    Name(String),
    External(Box<RawExternal>),
    Remote(Box<RawExternal>),
}

impl<'de> Deserialize<'de> for WakeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = WakeValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a wake logic's name, a table { command = [...] } or a table { extension = \"...\" }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<WakeValue, E> {
                Ok(WakeValue::Name(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<WakeValue, A::Error> {
                let x = RawExternal::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let remote_only = x.deliver.is_some()
                    || x.fresh_modules.is_some()
                    || x.package.is_some()
                    || x.checkout.is_some();
                // A family with its own driver (gptme) names its real host's code by `variant`
                // or `patch` instead of `extension`; `remote.rs` checks which the host takes.
                let code = (x.extension.as_ref().map(|_| ()))
                    .or(x.variant.as_ref().map(|_| ()))
                    .or(x.patch.as_ref().map(|_| ()));
                // `node = "mine.ts"` or `python = "mine.py"`: an adapter's command, spelt short.
                let short = x.node.is_some() || x.python.is_some();
                if short
                    && (x.command.is_some()
                        || code.is_some()
                        || (x.node.is_some() && x.python.is_some()))
                {
                    return Err(de::Error::custom(
                        "give one of `command`, `node`, `python` (an adapter) or `extension` (an extension a real host loads)",
                    ));
                }
                let command = x.command.as_ref().map(|_| ()).or(short.then_some(()));
                match (&command, &code) {
                    (Some(_), Some(_)) => Err(de::Error::custom(
                        "give either `command` (an adapter) or `extension` (an extension a real host loads), not both",
                    )),
                    (None, Some(_)) => Ok(WakeValue::Remote(Box::new(x))),
                    (None, None) => Err(de::Error::custom(
                        "give `command` (an adapter's program and arguments), `node` or `python` (a module for wakesim's Node or Python adapter) or `extension` (an extension a real host loads)",
                    )),
                    (Some(_), None) if remote_only => Err(de::Error::custom(
                        "`deliver`, `fresh_modules`, `package` and `checkout` are for a real host's `extension`, not an adapter's `command`",
                    )),
                    (Some(_), None) => Ok(WakeValue::External(Box::new(x))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `wake = { command = [...], cwd = "..", name = "..", constants_ms = [..], timeout_ms = n,
/// start_timeout_ms = n, options = { .. } }`: an adapter process speaking `docs/protocol.md`;
/// or, with `extension = ".."` in place of `command` (and optionally `deliver = "factory" |
/// "export:NAME" | "event:NAME"` and `fresh_modules = true`), the extension a real host loads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExternal {
    #[serde(default)]
    command: Option<Spanned<Vec<String>>>,
    /// A module for wakesim's Node adapter (`adapter_path`), relative to `cwd`: the command
    /// `node <adapters>/node/adapter.mjs MODULE`.
    #[serde(default)]
    node: Option<Spanned<String>>,
    /// A module for wakesim's Python adapter: `python3 <adapters>/python/run.py MODULE`.
    #[serde(default)]
    python: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) extension: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) deliver: Option<Spanned<String>>,
    /// A real host with its own driver (gptme): one of the driver's variants by name, or a patch
    /// file it applies to the loaded host.
    #[serde(default)]
    pub(super) variant: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) patch: Option<Spanned<String>>,
    /// Re-import the extension's modules for every run (its module-level state starts fresh; a
    /// factory's closure state always does).
    #[serde(default)]
    pub(super) fresh_modules: Option<bool>,
    /// A pinned npm package directory (its `package.json` and `package-lock.json`, relative to
    /// `cwd`) that holds the extension: installed with `npm ci` on first use, and `extension` is
    /// then a path inside its `node_modules`.
    #[serde(default)]
    pub(super) package: Option<Spanned<String>>,
    /// The name of an environment variable holding a checkout's directory (a repository not on
    /// a registry): `extension` is then a path inside it, and the scenario is not run without it.
    #[serde(default)]
    pub(super) checkout: Option<Spanned<String>>,
    /// The adapter's working directory, relative to the scenario file's directory (default: that
    /// directory). The program and its arguments are taken relative to it.
    #[serde(default)]
    cwd: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    constants_ms: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    pub(super) timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) start_timeout_ms: Option<Spanned<u64>>,
    #[serde(default)]
    pub(super) options: Option<toml::Table>,
}

/// Locates an error at a span of the file being read.
pub(super) type Err<'a> = &'a dyn Fn(std::ops::Range<usize>, String) -> Error;

impl RawExternal {
    pub(super) fn validate(
        &self,
        path: &Path,
        origin: (PathBuf, usize, usize),
        err: Err<'_>,
    ) -> Result<AdapterSpec> {
        let cwd = self.cwd(path, err)?;
        let command = match self.short(&cwd, err)? {
            Some(command) => command,
            None => {
                let Some(command_value) = &self.command else {
                    unreachable!("a table without `command` is read as a real host's wake");
                };
                let command = command_value.get_ref().clone();
                let Some(program) = command.first() else {
                    let message = "the command is empty: give the program and its arguments";
                    return Err(err(command_value.span(), message.to_string()));
                };
                self.program(program, &cwd, err)?;
                command
            }
        };
        let timeout_ms = bound(&self.timeout_ms, "timeout_ms", TIMEOUT_MS_DEFAULT, err)?;
        let start_timeout_ms = bound(
            &self.start_timeout_ms,
            "start_timeout_ms",
            START_TIMEOUT_MS_DEFAULT,
            err,
        )?;
        let constants_ms = self.constants(err)?;
        Ok(AdapterSpec {
            command,
            cwd,
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            options: self.options_json(),
            origin,
        })
    }

    /// `node = "MODULE"` or `python = "MODULE"`: the reference adapter's command for the module,
    /// which must be a file relative to `cwd`; the adapter is found by `adapter_path`.
    fn short(&self, cwd: &Path, err: Err<'_>) -> Result<Option<Vec<String>>> {
        use super::adapter_path::{Lang, find};
        let (lang, module) = match (&self.node, &self.python) {
            (Some(m), _) => (Lang::Node, m),
            (None, Some(m)) => (Lang::Python, m),
            (None, None) => return Ok(None),
        };
        let file = cwd.join(module.get_ref());
        if !file.is_file() {
            let message = format!(
                "the {} module `{}` is not a file",
                lang.key(),
                file.display()
            );
            return Err(err(module.span(), message));
        }
        let adapter = find(lang).map_err(|m| err(module.span(), m))?;
        if resolve_program(lang.program(), cwd).is_none() {
            let message = format!(
                "program `{}` (for the {} adapter) not found on PATH",
                lang.program(),
                lang.key()
            );
            return Err(err(module.span(), message));
        }
        Ok(Some(vec![
            lang.program().to_string(),
            adapter.display().to_string(),
            module.get_ref().clone(),
        ]))
    }

    /// The default label of a `node`/`python` wake: `node:mine.ts`, as the shipped scenarios name theirs.
    pub(super) fn short_label(&self) -> Option<String> {
        let (key, m) = match (&self.node, &self.python) {
            (Some(m), _) => ("node", m),
            (None, Some(m)) => ("python", m),
            (None, None) => return None,
        };
        let file = Path::new(m.get_ref())
            .file_name()?
            .to_string_lossy()
            .into_owned();
        Some(format!("{key}:{file}"))
    }

    /// `constants_ms`: a few, each within a run's longest duration.
    pub(super) fn constants(&self, err: Err<'_>) -> Result<Vec<u64>> {
        let Some(c) = &self.constants_ms else {
            return Ok(Vec::new());
        };
        let v = c.get_ref();
        if v.len() > CONSTANTS_MAX || v.iter().any(|&ms| ms > DURATION_MS_MAX) {
            let message =
                format!("at most {CONSTANTS_MAX} constants, each at most {DURATION_MS_MAX} ms");
            return Err(err(c.span(), message));
        }
        Ok(v.clone())
    }

    /// The adapter's directory: `cwd` relative to the scenario file's directory (default: that
    /// directory). It must exist.
    pub(super) fn cwd(&self, path: &Path, err: Err<'_>) -> Result<PathBuf> {
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Some(c) = &self.cwd else { return Ok(dir) };
        let cwd = dir.join(c.get_ref());
        if !cwd.is_dir() {
            return Err(err(
                c.span(),
                format!("`{}` is not a directory", cwd.display()),
            ));
        }
        Ok(cwd)
    }

    /// The command's program must be there: a path relative to `cwd`, or a name on `PATH`.
    fn program(&self, program: &str, cwd: &Path, err: Err<'_>) -> Result<()> {
        let span = self.command.as_ref().map_or(0..0, |c| c.span());
        if resolve_program(program, cwd).is_some() {
            return Ok(());
        }
        let where_ = if program.contains('/') {
            format!("in `{}`", cwd.display())
        } else {
            "on PATH".to_string()
        };
        Err(err(span, format!("program `{program}` not found {where_}")))
    }
}

/// A wall-clock bound in `1..=TIMEOUT_MS_MAX`, or its default.
pub(super) fn bound(
    t: &Option<Spanned<u64>>,
    key: &str,
    default: u64,
    err: Err<'_>,
) -> Result<u64> {
    let Some(t) = t else { return Ok(default) };
    let v = *t.get_ref();
    if v == 0 || v > TIMEOUT_MS_MAX {
        // The key is named: the error's own key is the `wake` table that holds it.
        return Err(err(
            t.span(),
            format!("`{key}` = {v} is out of range 1..={TIMEOUT_MS_MAX}"),
        ));
    }
    Ok(v)
}
