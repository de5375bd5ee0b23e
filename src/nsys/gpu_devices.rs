//! What `TARGET_INFO_GPU` says of each GPU besides its name: its UUID, PCI
//! address, chip, compute capability, SMs and memory.

use super::Report;

/// `TARGET_INFO_GPU` (the GPUs, by the `deviceId` of the activity tables).
const GPUS: &str = "TARGET_INFO_GPU";

/// One GPU of `TARGET_INFO_GPU`; columns an export lacks are `None`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GpuDevice {
    /// The `deviceId` of its work in the activity tables.
    pub id: i64,
    pub name: Option<String>,
    /// `busLocation`: `domain:bus:device.function`.
    pub pci_bus: Option<String>,
    /// `uuid`, as the export writes it (hex digits in dashed groups).
    pub uuid: Option<String>,
    /// `chipName`: GA100, AD104, ...
    pub chip: Option<String>,
    /// `computeMajor`, `computeMinor`.
    pub compute_capability: Option<(i64, i64)>,
    pub sm_count: Option<i64>,
    /// `totalMemory`, bytes.
    pub memory_bytes: Option<i64>,
    /// `memoryBandwidth`, bytes per second.
    pub memory_bandwidth: Option<i64>,
    /// `clockRate`, Hz.
    pub clock_hz: Option<i64>,
    /// `l2CacheSize`, bytes.
    pub l2_cache_bytes: Option<i64>,
    /// `cuDevice`: the CUDA device ordinal.
    pub cuda_device: Option<i64>,
}

impl Report {
    /// The GPUs of `TARGET_INFO_GPU`, by id (none when the export lacks the
    /// table, as exports before 2021 do).
    pub(crate) fn gpu_devices(&self) -> rusqlite::Result<Vec<GpuDevice>> {
        let Some(mut s) = self.select(GPUS) else {
            return Ok(Vec::new());
        };
        let id = s.first_of::<i64>(&["id", "deviceId"]);
        let name = s.optional::<String>("name");
        let bus = s.optional::<String>("busLocation");
        let uuid = s.optional::<String>("uuid");
        let chip = s.optional::<String>("chipName");
        let major = s.optional::<i64>("computeMajor");
        let minor = s.optional::<i64>("computeMinor");
        let sms = s.optional::<i64>("smCount");
        let memory = s.optional::<i64>("totalMemory");
        let bandwidth = s.optional::<i64>("memoryBandwidth");
        let clock = s.optional::<i64>("clockRate");
        let l2 = s.optional::<i64>("l2CacheSize");
        let cu_device = s.optional::<i64>("cuDevice");
        if !self.readable(&s) {
            return Ok(Vec::new());
        }
        let mut gpus: Vec<GpuDevice> = Vec::new();
        self.each_selected(&s, "", |r| {
            let Some(id) = id.get(r)? else {
                return Ok(());
            };
            // One row per GPU and VM; the first describes it.
            if gpus.iter().any(|g| g.id == id) {
                return Ok(());
            }
            gpus.push(GpuDevice {
                id,
                name: name.get(r)?,
                pci_bus: bus.get(r)?,
                uuid: uuid.get(r)?,
                chip: chip.get(r)?,
                compute_capability: major.get(r)?.zip(minor.get(r)?),
                sm_count: sms.get(r)?,
                memory_bytes: memory.get(r)?,
                memory_bandwidth: bandwidth.get(r)?,
                clock_hz: clock.get(r)?,
                l2_cache_bytes: l2.get(r)?,
                cuda_device: cu_device.get(r)?,
            });
            Ok(())
        })?;
        gpus.sort_by_key(|g| g.id);
        Ok(gpus)
    }
}
