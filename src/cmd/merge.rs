//! `wakesim merge SHARD.jsonl..`: the report of a whole run from its shards' JSON Lines.

use std::path::PathBuf;

use crate::error::Result;
use crate::family::Registry;
use crate::report;

#[derive(clap::Args)]
pub struct Args {
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

pub fn main(registry: &Registry, args: Args) -> Result<i32> {
    let (lines, met) = report::merge::merge(registry, &args.files)?;
    super::print(&lines)?;
    Ok(if met { 0 } else { 1 })
}
