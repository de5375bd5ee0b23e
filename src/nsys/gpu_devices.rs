//! What `TARGET_INFO_GPU` says of each GPU besides its name: its UUID, PCI
//! address, chip, compute capability, SMs and memory.

use super::columns::{columns, ReadRow, TakeAll};
use super::meta::GPUS;
use super::select::Row;
use super::Report;

columns! {
    /// What `TARGET_INFO_GPU` says of a GPU besides its id; a column an
    /// export lacks is NULL.
    pub(crate) struct GpuInfoColumns = GPU_INFO {
        name: Option<String> = optional("name"),
        /// `domain:bus:device.function`.
        bus_location: Option<String> = optional("busLocation"),
        /// Hex digits in dashed groups, as the export writes it.
        uuid: Option<String> = optional("uuid"),
        /// GA100, AD104, ...
        chip_name: Option<String> = optional("chipName"),
        compute_major: Option<i64> = optional("computeMajor"),
        compute_minor: Option<i64> = optional("computeMinor"),
        sm_count: Option<i64> = optional("smCount"),
        /// Bytes.
        total_memory: Option<i64> = optional("totalMemory"),
        /// Bytes per second.
        memory_bandwidth: Option<i64> = optional("memoryBandwidth"),
        /// Hz.
        clock_rate: Option<i64> = optional("clockRate"),
        /// Bytes.
        l2_cache_size: Option<i64> = optional("l2CacheSize"),
        /// The CUDA device ordinal.
        cu_device: Option<i64> = optional("cuDevice"),
    }
    /// One GPU's row of `TARGET_INFO_GPU`.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub(crate) struct GpuInfo;
}

/// One GPU of `TARGET_INFO_GPU`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GpuDevice {
    /// The `deviceId` of its work in the activity tables.
    pub id: i64,
    pub info: GpuInfo,
}

impl GpuInfo {
    /// `computeMajor`, `computeMinor`.
    pub(crate) fn compute_capability(&self) -> Option<(i64, i64)> {
        self.compute_major.zip(self.compute_minor)
    }
}

impl Report {
    /// The GPUs of `TARGET_INFO_GPU`, by id (none when the export lacks the
    /// table, as exports before 2021 do).
    pub(crate) fn gpu_devices(&self) -> rusqlite::Result<Vec<GpuDevice>> {
        let mut gpus: Vec<GpuDevice> = Vec::new();
        self.each_row(GPUS, "", |s| {
            let id = s.first_of::<i64>(&["id", "deviceId"]);
            let info = GPU_INFO.take_all(s);
            let gpus = &mut gpus;
            move |r: &Row| {
                let Some(id) = id.get(r)? else {
                    return Ok(());
                };
                // One row per GPU and VM; the first describes it.
                if gpus.iter().any(|g| g.id == id) {
                    return Ok(());
                }
                gpus.push(GpuDevice {
                    id,
                    info: info.read(r)?,
                });
                Ok(())
            }
        })?;
        gpus.sort_by_key(|g| g.id);
        Ok(gpus)
    }
}
