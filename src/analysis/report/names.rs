//! How NVTX range names group in the report's list of scopes: PyTorch's
//! `emit_nvtx` decorates each range with per-instance values (`aten::mm,
//! op_id = 317126`, `, seq = 12`, `, sizes = [[32, 64]]`), which make every
//! range a name of its own. The name is cut before the first `, KEY = `
//! (a word, then ` = `), so the ranges of one operator group together.
//! Names without such a part are kept whole.

use std::borrow::Cow;

use regex::Regex;
use std::sync::OnceLock;

/// The name `name` groups under.
pub(super) fn group_name(name: &str) -> Cow<'_, str> {
    static DECORATION: OnceLock<Regex> = OnceLock::new();
    let decoration = DECORATION
        .get_or_init(|| Regex::new(r", [A-Za-z_][A-Za-z0-9_]* = ").expect("a valid pattern"));
    match decoration.find(name) {
        Some(m) if m.start() > 0 => Cow::Owned(name[..m.start()].to_owned()),
        _ => Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorch_decorations_are_cut() {
        // Real names of nsys-ai_h100_2gpu_1s and PyTorch's emit_nvtx shapes.
        assert_eq!(group_name("aten::to, op_id = 317177"), "aten::to");
        assert_eq!(
            group_name("aten::mm, seq = 12, op_id = 7, sizes = [[32, 64], [64, 64]]"),
            "aten::mm"
        );
        assert_eq!(group_name("ncclAllReduce"), "ncclAllReduce");
        assert_eq!(group_name("step 5"), "step 5");
        assert_eq!(group_name("a, b"), "a, b");
    }
}
