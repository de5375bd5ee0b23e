//! nsys versions (`2025.3.1`), as `nsys --version` prints them and as
//! reports and exports record the nsys that captured them; compared as
//! numbers, so that 2022.10 comes after 2022.4.

use std::fmt;

/// A version: a year and at least two more numbers (`2022.4.2.1`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Version(Vec<u32>);

impl Version {
    /// Parses `2022.4.2.1` or `2022.4.2.1-df9881f` (a build suffix is dropped).
    pub(crate) fn parse(text: &str) -> Option<Version> {
        let text = text.split('-').next()?;
        let parts: Vec<&str> = text.split('.').collect();
        let numbers = parts.len() >= 3
            && parts[0].len() == 4
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()));
        numbers.then(|| Version(parts.iter().map(|p| p.parse().unwrap_or(0)).collect()))
    }

    /// The version in the first install directory of nsys that `text`
    /// names: `.../nsight-systems/2022.1.3/...` (NVIDIA's packages),
    /// `.../nsight-systems-2023.1.2/...` (the CUDA toolkit's), or
    /// `.../nsight-compute/2025.3.1/host/target-linux-x64` (the nsys that
    /// ships inside Nsight Compute).
    pub(crate) fn from_install_dir(text: &str) -> Option<Version> {
        const FORMS: [(&str, &str); 4] = [
            ("nsight-systems/", "/"),
            ("nsight-systems-", "/"),
            ("nsight-compute/", "/host/target-"),
            ("nsight-compute-", "/host/target-"),
        ];
        let mut found: Option<(usize, Version)> = None;
        for (prefix, then) in FORMS {
            for (at, _) in text.match_indices(prefix) {
                if found.as_ref().is_some_and(|(first, _)| *first < at) {
                    break;
                }
                let rest = &text[at + prefix.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .unwrap_or(rest.len());
                if !rest[end..].starts_with(then) {
                    continue;
                }
                if let Some(version) = Version::parse(&rest[..end]) {
                    found = Some((at, version));
                    break;
                }
            }
        }
        found.map(|(_, version)| version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn parses_versions_and_drops_build_suffixes() {
        assert_eq!(v("2022.4.2.1-df9881f").to_string(), "2022.4.2.1");
        assert_eq!(v("2025.5.1").to_string(), "2025.5.1");
        for bad in [
            "", "2022", "2022.4", "22.4.1", "2022.x.1", "2022..1", "version",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn compares_as_numbers() {
        assert!(v("2022.10.1") > v("2022.4.2"));
        assert!(v("2025.3.1") > v("2022.4.2.1"));
        assert!(v("2022.4.2") < v("2022.4.2.1"));
        assert!(v("2021.5.1") < v("2022.1.3"));
        assert_eq!(v("2022.4.2"), v("2022.4.2"));
    }

    #[test]
    fn reads_install_directories() {
        let read = |text: &str| Version::from_install_dir(text).map(|v| v.to_string());
        assert_eq!(
            read("/opt/nvidia/nsight-systems/2022.1.3/target-linux-x64").as_deref(),
            Some("2022.1.3")
        );
        assert_eq!(
            read("/usr/local/cuda-12.1/nsight-systems-2023.1.2/target-linux-x64").as_deref(),
            Some("2023.1.2")
        );
        assert_eq!(
            read("\0/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/libcupti.so\0")
                .as_deref(),
            Some("2025.3.1")
        );
        // Nsight Compute's own files, and package names, are not nsys.
        assert_eq!(
            read("/opt/nvidia/nsight-compute/2025.3.1/target/linux-x64"),
            None
        );
        assert_eq!(read("nsight-compute-12-8=12.8.0-1;"), None);
        assert_eq!(read("no install directory"), None);
        // The first one named wins.
        assert_eq!(
            read("x/nsight-compute/2025.3.1/host/target-linux-x64 y/nsight-systems/2024.1.1/")
                .as_deref(),
            Some("2025.3.1")
        );
    }
}
