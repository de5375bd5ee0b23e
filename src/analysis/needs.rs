//! The tables a summary or a rule reads its data from, and what to say when
//! an export lacks them: nsys says a rule is skipped ("does not contain the
//! required CUDA data") rather than that it found nothing.

use crate::nsys::Report;

/// What an answer needs of an export: every group, each met by any one of
/// its tables (`&[&[RUNTIME], &[KERNEL, MEMCPY, MEMSET]]`: the API calls and
/// some GPU work).
pub(crate) type Needs = &'static [&'static [&'static str]];

/// Why `report` cannot answer what needs `needs`, naming the tables it
/// lacks (`None` where it has them, whether or not they hold rows).
pub(crate) fn missing(report: &Report, needs: Needs) -> Option<String> {
    let lacking: Vec<String> = needs
        .iter()
        .filter(|any| !any.iter().any(|t| report.has_table(t)))
        .map(|any| match any {
            [one] => format!("no {one}"),
            several => format!("none of {}", several.join(", ")),
        })
        .collect();
    match lacking.is_empty() {
        true => None,
        false => Some(format!("the export has {}", lacking.join(" and "))),
    }
}
