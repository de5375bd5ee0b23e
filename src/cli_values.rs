//! The library's enumerated options as clap knows them (the `cli` feature):
//! each value by the name the library gives it, older names accepted as
//! aliases, so that `--help` and shell completions list the values and a bad
//! one is refused with the list. The names are the types' own
//! ([`Part::name`], [`Rule::name`], ...): nothing is named twice.

use clap::builder::PossibleValue;
use clap::ValueEnum;

use crate::analyze::Rule;
use crate::compare::Kind;
use crate::report::PageFormat;
use crate::stats::{StatsReport, TableFormat};
use crate::Part;

// TableFormat and PageFormat have no list of their variants: a new one fails
// to compile in `to_possible_value`'s match below, and goes into
// `value_variants` beside it.
impl ValueEnum for TableFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            TableFormat::Table,
            TableFormat::Csv,
            TableFormat::Json,
            TableFormat::Markdown,
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            TableFormat::Table => PossibleValue::new("table"),
            TableFormat::Csv => PossibleValue::new("csv"),
            TableFormat::Json => PossibleValue::new("json"),
            TableFormat::Markdown => PossibleValue::new("md").alias("markdown"),
        })
    }
}

impl ValueEnum for PageFormat {
    fn value_variants<'a>() -> &'a [Self] {
        &[PageFormat::Html, PageFormat::Markdown, PageFormat::Json]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            PageFormat::Html => PossibleValue::new("html"),
            PageFormat::Markdown => PossibleValue::new("md").alias("markdown"),
            PageFormat::Json => PossibleValue::new("json"),
        })
    }
}

impl ValueEnum for Part {
    fn value_variants<'a>() -> &'a [Self] {
        &Part::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

impl ValueEnum for Kind {
    fn value_variants<'a>() -> &'a [Self] {
        &Kind::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()))
    }
}

impl ValueEnum for Rule {
    fn value_variants<'a>() -> &'a [Self] {
        &Rule::ALL
    }

    /// The name of nsys 2024 and later; nsys 2022.4's is taken too.
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).alias(self.legacy_name()))
    }
}

impl ValueEnum for StatsReport {
    fn value_variants<'a>() -> &'a [Self] {
        &StatsReport::ALL
    }

    /// The name of nsys 2023 and later; the older one is taken too.
    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.name()).alias(self.legacy_name()))
    }
}
