//! Nsight's packed process and thread ids.
//!
//! `globalTid = (1 << 48) | pid << 24 | tid`; the bits above 48 may carry a VM
//! id, so pid and tid are always masked out. `globalPid` is the same with tid 0.

pub(crate) fn pid_of(global_id: i64) -> u32 {
    ((global_id >> 24) & 0xFF_FFFF) as u32
}

pub(crate) fn tid_of(global_tid: i64) -> u32 {
    (global_tid & 0xFF_FFFF) as u32
}

/// SQL for the pid part of a `globalTid`/`globalPid` column.
pub(crate) fn pid_sql(column: &str) -> String {
    format!("(({column} >> 24) & 16777215)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_vm_bits() {
        let g = (1i64 << 48) | (7i64 << 50) | (4242 << 24) | 17;
        assert_eq!(pid_of(g), 4242);
        assert_eq!(tid_of(g), 17);
    }
}
