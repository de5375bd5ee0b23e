//! `--group-names`, the flag of `stats`, `compare` and `series` that names
//! NVTX ranges by their operator.

use nsys2perfetto::stats::RangeNames;

/// How NVTX ranges are named where they are summed.
#[derive(clap::Args)]
pub struct Grouping {
    /// Name NVTX ranges by their operator where they are summed or matched:
    /// without the decorations PyTorch's emit_nvtx appends (`, seq = N`,
    /// `, op_id = N`, `, sizes = [...]`, `, input_op_ids = [...]`), then
    /// without a number that ends the name after `#` or a space
    /// (`ProfilerStep#12`, `step 4`). `aten::mm, op_id = 317126` counts as
    /// `aten::mm`. Numbers after `_` and inside names stay, and so do kernel
    /// and API names. Default: every range by its name as recorded, as nsys
    /// sums them.
    #[arg(long)]
    group_names: bool,
}

impl Grouping {
    /// The naming asked for.
    pub fn range_names(&self) -> RangeNames {
        match self.group_names {
            true => RangeNames::Grouped,
            false => RangeNames::Recorded,
        }
    }
}
