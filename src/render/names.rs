//! Long names (C++ kernels' signatures, which run to thousands of
//! characters) shortened for a page's table, where the whole name stays at
//! hand beside the short one: namespaces, template arguments and parameter
//! lists elided, in that order, until the name fits.

/// The most characters of a name a page's table shows before its whole
/// name is asked for.
pub(crate) const LONGEST_SHOWN: usize = 56;

/// `name` shortened to at most `longest` characters, or `None` where it
/// fits whole. A C++ signature loses its return type `void`, its
/// namespaces (`at::native::`), its parameters (`(…)`) and its nested
/// template arguments (`<…>`), then all its template arguments; what is
/// still too long (or is not C++: an NVTX range's text) is cut, ending in
/// "…".
pub(crate) fn shortened(name: &str, longest: usize) -> Option<String> {
    if name.chars().count() <= longest {
        return None;
    }
    let chars: Vec<char> = name.trim().chars().collect();
    let nested = elided(&chars, 1);
    let candidates = [
        nested.clone(),
        first_arguments(&nested, longest),
        elided(&chars, 0),
    ];
    let fitting = candidates
        .iter()
        .find(|c| !c.is_empty() && c.chars().count() <= longest);
    let short = match fitting {
        Some(short) => short.clone(),
        None => {
            let best = match &candidates[2] {
                c if c.is_empty() => name.trim().to_owned(),
                c => c.clone(),
            };
            let kept: String = best
                .chars()
                .take(longest.saturating_sub(1).max(1))
                .collect();
            format!("{kept}…")
        }
    };
    (short != name).then_some(short)
}

/// `name` with its namespaces dropped, its parameter list as `(…)`, and
/// the template arguments nested deeper than `kept_depth` as `<…>`. Text
/// that is not balanced (`a < b`) is kept as it is.
fn elided(name: &[char], kept_depth: usize) -> String {
    let mut out = String::new();
    // Where the name now being written starts in `out`, for each template
    // level open: a `::` drops what is before it, back to there.
    let mut starts: Vec<usize> = vec![0];
    let mut i = 0;
    while i < name.len() {
        let c = name[i];
        let rest = &name[i..];
        if starts_with(rest, "(anonymous namespace)::") {
            i += "(anonymous namespace)::".len();
            continue;
        }
        match c {
            ':' if rest.get(1) == Some(&':') => {
                // A namespace or class: dropped, unless what follows is an
                // operator (`Functor<…>::operator()` keeps its class).
                if !starts_with(&rest[2..], "operator") {
                    out.truncate(*starts.last().unwrap_or(&0));
                } else {
                    out.push_str("::");
                }
                i += 2;
                continue;
            }
            '<' if !after_operator(&out) => match closing(name, i) {
                Some(end) if starts.len() > kept_depth => {
                    out.push_str("<…>");
                    i = end + 1;
                    continue;
                }
                Some(_) => {
                    out.push('<');
                    starts.push(out.len());
                }
                None => out.push('<'),
            },
            '>' if starts.len() > 1 => {
                starts.pop();
                out.push('>');
            }
            '(' if starts.len() == 1 && !after_operator(&out) => match closing(name, i) {
                Some(end) => {
                    out.push_str(if end == i + 1 { "()" } else { "(…)" });
                    i = end + 1;
                    continue;
                }
                None => out.push('('),
            },
            ',' | ' ' | '(' | '*' | '&' => {
                out.push(c);
                if let Some(start) = starts.last_mut() {
                    *start = out.len();
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    let out = out.trim();
    out.strip_prefix("void ").unwrap_or(out).to_owned()
}

/// `short` (an [`elided`] name) with only as many of its template
/// arguments as fit in `longest` characters, the rest as `…`
/// (`kernel<4, FillFunctor<…>, …>(…)`); empty where not even one fits.
fn first_arguments(short: &str, longest: usize) -> String {
    let chars: Vec<char> = short.chars().collect();
    let Some(open) = chars.iter().position(|&c| c == '<') else {
        return String::new();
    };
    let Some(close) = closing(&chars, open) else {
        return String::new();
    };
    // The arguments: split at the commas outside any bracket.
    let mut arguments = vec![String::new()];
    let mut depth = 0usize;
    for &c in &chars[open + 1..close] {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                arguments.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(argument) = arguments.last_mut() {
            argument.push(c);
        }
    }
    let head: String = chars[..=open].iter().collect();
    let tail: String = chars[close..].iter().collect();
    for kept in (1..arguments.len()).rev() {
        let listed: Vec<&str> = arguments[..kept].iter().map(|a| a.trim()).collect();
        let candidate = format!("{head}{}, …{tail}", listed.join(", "));
        if candidate.chars().count() <= longest {
            return candidate;
        }
    }
    String::new()
}

fn starts_with(text: &[char], prefix: &str) -> bool {
    let mut chars = text.iter();
    prefix.chars().all(|p| chars.next() == Some(&p))
}

/// Whether `out` ends in the keyword `operator` (`operator<`,
/// `operator()`): the bracket is the operator's name.
fn after_operator(out: &str) -> bool {
    out.trim_end_matches(['<', '(', ')']).ends_with("operator")
}

/// The index of the bracket that closes the one at `open` (`<` or `(`),
/// counting the brackets of both kinds nested in it; `None` where it is
/// not closed.
fn closing(name: &[char], open: usize) -> Option<usize> {
    let (mut angles, mut parens) = (0usize, 0usize);
    for (i, &c) in name.iter().enumerate().skip(open) {
        match c {
            '<' => angles += 1,
            '>' if angles > 0 => angles -= 1,
            '(' => parens += 1,
            ')' if parens > 0 => parens -= 1,
            _ => continue,
        }
        let closed = match name[open] {
            '<' => angles == 0 && parens == 0,
            _ => parens == 0,
        };
        if closed {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_that_fits_is_shown_whole() {
        assert_eq!(shortened("ncclKernel_AllReduce(ncclDevComm*)", 60), None);
    }

    #[test]
    fn a_signature_loses_namespaces_parameters_then_template_arguments() {
        let kernel = "void at::native::vectorized_elementwise_kernel<4, \
                      at::native::FillFunctor<float>, at::detail::Array<char*, 1>>\
                      (int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
        assert_eq!(
            shortened(kernel, 64).as_deref(),
            Some("vectorized_elementwise_kernel<4, FillFunctor<…>, Array<…>>(…)")
        );
        assert_eq!(
            shortened(kernel, 60).as_deref(),
            Some("vectorized_elementwise_kernel<4, FillFunctor<…>, …>(…)")
        );
        assert_eq!(
            shortened(kernel, 35).as_deref(),
            Some("vectorized_elementwise_kernel<…>(…)")
        );
        let anonymous = "void at::native::(anonymous namespace)::softmax_warp_forward\
                         <float, float, float, 10, false, false>(float*, const float*, int, int, int)";
        assert_eq!(
            shortened(anonymous, 64).as_deref(),
            Some("softmax_warp_forward<float, float, float, 10, false, false>(…)")
        );
    }

    #[test]
    fn an_operator_keeps_its_class() {
        let functor = "void at::native::elementwise_kernel<128, 2, \
                       at::native::gpu_kernel_impl<at::native::AddFunctor<float>>\
                       (at::TensorIteratorBase&, const at::native::AddFunctor<float>&)::\
                       {lambda(int)#1}>(int, T3)";
        let short = shortened(functor, 60).unwrap();
        assert!(short.chars().count() <= 60, "{short}");
        assert!(short.starts_with("elementwise_kernel<"), "{short}");
    }

    #[test]
    fn text_that_is_not_cpp_is_cut() {
        let range = format!("step {} < done ({}", "x".repeat(40), "y".repeat(40));
        let short = shortened(&range, 30).unwrap();
        assert_eq!(short.chars().count(), 30);
        assert!(short.ends_with('…'));
        assert!(range.starts_with(short.trim_end_matches('…')));
    }
}
