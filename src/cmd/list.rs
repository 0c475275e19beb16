//! `wakesim list [--format text|json]`.

use super::args::Format;
use crate::error::Result;
use crate::family::Registry;
use crate::report;

#[derive(clap::Args)]
pub struct Args {
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    super::print(&match args.format {
        Format::Json => report::list::json(registry),
        Format::Text => report::list::text(registry),
    })?;
    Ok(0)
}
