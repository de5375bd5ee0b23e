//! Which steps of different ranks are the same step, and how the ranks
//! compare in each.
//!
//! Steps are matched by name where names tell steps apart: each rank's
//! step names are distinct (`ProfilerStep#12`), and more than half of each
//! rank's names are found on another rank too. Else by order: the first
//! step of every rank is step 1, and so on (names that repeat, as
//! `train_step`, or that carry a per-rank number). A step some ranks lack is
//! kept, with those ranks said missing.

use std::collections::{HashMap, HashSet};

use super::{RunSkew, Slowest, Step, StepMatch, StepTime};

/// The steps of the ranks (each in start order), matched.
pub(super) fn match_steps(ranks: Vec<Vec<StepTime>>) -> (StepMatch, Vec<Step>) {
    let by = match_by(&ranks);
    let count = ranks.len();
    let mut steps: Vec<Step> = Vec::new();
    match by {
        StepMatch::Order => {
            for (r, rank_steps) in ranks.into_iter().enumerate() {
                for (i, time) in rank_steps.into_iter().enumerate() {
                    if steps.len() == i {
                        steps.push(Step::new(time.name.clone(), count));
                    }
                    steps[i].times[r] = Some(time);
                }
            }
        }
        StepMatch::Name => {
            // Each name at its place in the first rank that has it, after
            // the step before it there: ranks that skip a step keep the order.
            let mut at: HashMap<String, usize> = HashMap::new();
            for (r, rank_steps) in ranks.into_iter().enumerate() {
                let mut previous: Option<usize> = None;
                for time in rank_steps {
                    let place = match at.get(&time.name) {
                        Some(&place) => place,
                        None => {
                            let place = previous.map_or(0, |p| p + 1);
                            steps.insert(place, Step::new(time.name.clone(), count));
                            if place + 1 < steps.len() {
                                at = places(&steps);
                            } else {
                                at.insert(time.name.clone(), place);
                            }
                            place
                        }
                    };
                    previous = Some(place);
                    steps[place].times[r] = Some(time);
                }
            }
        }
    }
    for step in &mut steps {
        step.slowest = slowest(&step.times);
    }
    (by, steps)
}

fn places(steps: &[Step]) -> HashMap<String, usize> {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), i))
        .collect()
}

/// Whether the ranks' step names tell steps apart (see the module's rule).
fn match_by(ranks: &[Vec<StepTime>]) -> StepMatch {
    let names: Vec<HashSet<&str>> = ranks
        .iter()
        .map(|steps| steps.iter().map(|s| s.name.as_str()).collect())
        .collect();
    let distinct = ranks.iter().zip(&names).all(|(s, n)| s.len() == n.len());
    let stepping = names.iter().filter(|n| !n.is_empty()).count();
    let shared = names.iter().enumerate().all(|(r, mine)| {
        let elsewhere = mine
            .iter()
            .filter(|name| {
                names
                    .iter()
                    .enumerate()
                    .any(|(o, other)| o != r && other.contains(*name))
            })
            .count();
        mine.is_empty() || 2 * elsewhere > mine.len()
    });
    match distinct && (stepping < 2 || shared) {
        true => StepMatch::Name,
        false => StepMatch::Order,
    }
}

/// The slowest rank of a step, where at least two ranks ran it.
fn slowest(times: &[Option<StepTime>]) -> Option<Slowest> {
    let present: Vec<(usize, u64)> = times
        .iter()
        .enumerate()
        .filter_map(|(r, t)| t.as_ref().map(|t| (r, t.duration_ns)))
        .collect();
    if present.len() < 2 {
        return None;
    }
    // Ties go to the rank given first.
    let (rank, longest) = present
        .iter()
        .copied()
        .fold(present[0], |a, b| if b.1 > a.1 { b } else { a });
    let (fastest_rank, shortest) =
        present
            .iter()
            .copied()
            .fold(present[0], |a, b| if b.1 < a.1 { b } else { a });
    let mut durations: Vec<u64> = present.iter().map(|p| p.1).collect();
    durations.sort_unstable();
    let n = durations.len();
    let median_ns = match n % 2 {
        1 => durations[n / 2] as f64,
        _ => (durations[n / 2 - 1] as f64 + durations[n / 2] as f64) / 2.0,
    };
    Some(Slowest {
        rank,
        fastest_rank,
        median_ns,
        lead_over_median_ns: longest as f64 - median_ns,
        skew_ns: longest - shortest,
    })
}

/// The skew over the run, of `ranks` ranks.
pub(super) fn run_skew(steps: &[Step], ranks: usize) -> RunSkew {
    let compared: Vec<(usize, &Slowest)> = steps
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.slowest.as_ref().map(|sl| (i, sl)))
        .collect();
    let mut slowest_count = vec![0; ranks];
    // A step every rank took equally long (a tie) has no slowest rank.
    for (_, s) in compared.iter().filter(|(_, s)| s.skew_ns > 0) {
        slowest_count[s.rank] += 1;
    }
    let most = slowest_count.iter().copied().max().unwrap_or(0);
    let max = compared
        .iter()
        .fold(None::<(usize, u64)>, |m, &(i, s)| match m {
            Some((_, skew)) if skew >= s.skew_ns => m,
            _ => Some((i, s.skew_ns)),
        });
    let total: u128 = compared.iter().map(|(_, s)| u128::from(s.skew_ns)).sum();
    RunSkew {
        steps_compared: compared.len(),
        mean_skew_ns: match compared.len() {
            0 => None,
            n => Some(total as f64 / n as f64),
        },
        max_skew: max,
        slowest_most_often: (most > 0)
            .then(|| slowest_count.iter().position(|&c| c == most))
            .flatten(),
        slowest_count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(name: &str, duration_ns: u64) -> StepTime {
        StepTime {
            name: name.to_owned(),
            start_ns: 0,
            duration_ns,
            gpu_busy_ns: 0,
        }
    }

    fn names(steps: &[Step]) -> Vec<&str> {
        steps.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn indexed_names_match_by_name_and_a_skipped_step_keeps_its_place() {
        let ranks = vec![
            vec![time("S#1", 10), time("S#3", 30)],
            vec![time("S#1", 12), time("S#2", 20), time("S#3", 31)],
            vec![time("S#1", 11), time("S#2", 22), time("S#3", 39)],
        ];
        let (by, steps) = match_steps(ranks);
        assert_eq!(by, StepMatch::Name);
        assert_eq!(names(&steps), ["S#1", "S#2", "S#3"]);
        assert!(steps[1].times[0].is_none(), "rank 0 lacks S#2");
        let s = steps[0].slowest.as_ref().unwrap();
        assert_eq!((s.rank, s.fastest_rank, s.skew_ns), (1, 0, 2));
        assert_eq!((s.median_ns, s.lead_over_median_ns), (11.0, 1.0));
        // Two ranks ran S#2: the median is their mean.
        let s = steps[1].slowest.as_ref().unwrap();
        assert_eq!((s.rank, s.median_ns, s.lead_over_median_ns), (2, 21.0, 1.0));
        let skew = run_skew(&steps, 3);
        assert_eq!(skew.steps_compared, 3);
        assert_eq!(skew.slowest_count, [0, 1, 2]);
        assert_eq!(skew.slowest_most_often, Some(2));
        assert_eq!(skew.max_skew, Some((2, 9)));
        assert_eq!(skew.mean_skew_ns, Some((2.0 + 2.0 + 9.0) / 3.0));
    }

    #[test]
    fn repeated_or_per_rank_names_match_by_order() {
        let repeated = vec![
            vec![time("step", 10), time("step", 20)],
            vec![time("step", 11), time("step", 19)],
        ];
        let (by, steps) = match_steps(repeated);
        assert_eq!(by, StepMatch::Order);
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[1].slowest.as_ref().unwrap().rank, 0);
        // Names with a per-rank number share nothing.
        let numbered = vec![
            vec![time("op 17", 10)],
            vec![time("op 96", 12), time("op 97", 1)],
        ];
        let (by, steps) = match_steps(numbered);
        assert_eq!(by, StepMatch::Order);
        assert_eq!(names(&steps), ["op 17", "op 97"]);
        assert!(steps[1].times[0].is_none() && steps[1].slowest.is_none());
        let skew = run_skew(&steps, 2);
        assert_eq!((skew.steps_compared, skew.max_skew), (1, Some((0, 2))));
    }

    #[test]
    fn no_steps_compare_nothing() {
        let (_, steps) = match_steps(vec![vec![], vec![]]);
        assert!(steps.is_empty());
        let skew = run_skew(&steps, 2);
        assert_eq!(skew.mean_skew_ns, None);
        assert_eq!(skew.slowest_most_often, None);
    }
}
