//! `wake = { variant = "..." }` or `{ patch = "..." }` on a real host whose family has a driver
//! of its own (`family::OwnDriver`; gptme's is `adapters/python/gptme_driver.py`): the host's
//! own code or a named patch of it the driver knows, or a patch file the driver applies to the
//! loaded host. Checked into a [`RemoteSpec`] for the remote lane like an `extension`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::adapter::{Err, RawExternal};
use crate::error::Result;
use crate::family::{HostKind, OwnDriver};
use crate::remote::{RemoteSpec, home};

impl RawExternal {
    /// The table of a real host run by its family's own driver. Returns the spec and the wake's
    /// label.
    pub(super) fn validate_own(
        &self,
        path: &Path,
        host: HostKind,
        driver: OwnDriver,
        origin: (PathBuf, usize, usize),
        err: Err<'_>,
    ) -> Result<(RemoteSpec, String)> {
        let real = host.real().expect("a real host");
        let family = host.family();
        let example = format!("`wake = {{ variant = \"{}\" }}`", driver.own);
        if let Some(key) = self.extension.as_ref().or(self.deliver.as_ref()) {
            let message = format!(
                "{} runs its driver's `variant` or a `patch`, not an `extension`: give {example} or `{{ patch = \"...\" }}`",
                host.name()
            );
            return Err(err(key.span(), message));
        }
        if self.fresh_modules.is_some() {
            let message = format!(
                "`fresh_modules` is for an `extension`; {} reloads nothing",
                host.name()
            );
            return Err(err(self.variant_or_patch_span(), message));
        }
        let variant = match &self.variant {
            Some(v) if !driver.variants.contains(&v.get_ref().as_str()) => {
                let message = format!(
                    "variant `{}` is not one of {} for {}",
                    v.get_ref(),
                    driver.variants.join(", "),
                    family.name()
                );
                return Err(err(v.span(), message));
            }
            Some(v) => v.get_ref().clone(),
            None => driver.own.to_string(),
        };
        let patch = match &self.patch {
            Some(p) => {
                let file = self.cwd(path, err)?.join(p.get_ref());
                match file.canonicalize() {
                    Ok(f) if f.is_file() => Some(f),
                    _ => {
                        let message = format!("patch `{}` not found", file.display());
                        return Err(err(p.span(), message));
                    }
                }
            }
            None => None,
        };
        // The driver and its pins are embedded in the binary (`adapters/python/`) and written
        // into the cache directory on first use (`remote::home`).
        let pin = driver.pin.replace("{version}", real.version);
        if !home::embedded(&pin) {
            let message = format!("{} is not pinned: {pin} is missing", host.name());
            return Err(err(self.variant_or_patch_span(), message));
        }
        let root = home::sources().map_err(|e| err(self.variant_or_patch_span(), e))?;
        let constants_ms = self.constants(err)?;
        let (timeout_ms, start_timeout_ms) = self.remote_bounds(err)?;
        let label = self.name.clone().unwrap_or_else(|| {
            let file = (patch.as_ref()).and_then(|p| p.file_name().map(|n| n.to_string_lossy()));
            match (file, &self.variant) {
                (Some(f), Some(v)) => format!("{v}+{f}"),
                (Some(f), None) => f.into_owned(),
                (None, _) => variant.clone(),
            }
        });
        let wake = json!({
            "variant": variant,
            "patch": patch.map(|p| p.to_string_lossy().into_owned()),
            "options": self.options_json(),
            "constants_ms": constants_ms,
        });
        let spec = RemoteSpec {
            family: family.name(),
            version: real.version.to_string(),
            vocab: family.vocab(),
            wake,
            // The family's sections are read after `wake`; the scenario fills them in.
            sections: Value::Null,
            command: driver.command.iter().map(|s| s.to_string()).collect(),
            cwd: root.to_path_buf(),
            constants_ms,
            timeout_ms,
            start_timeout_ms,
            origin,
        };
        Ok((spec, label))
    }

    /// The span errors about the table as a whole point at.
    fn variant_or_patch_span(&self) -> std::ops::Range<usize> {
        let key = self.variant.as_ref().or(self.patch.as_ref());
        key.map_or(0..0, |k| k.span())
    }
}
