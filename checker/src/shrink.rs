//! Shrinking a failing set of operations to a minimal one (delta debugging, then single
//! removals), so a violation prints the few operations that show it.

/// Returns a subset of `items` (kept in their order, possibly empty) for which `fails` still
/// holds and from
/// which no single item can be removed without `fails` turning false (1-minimal). `fails` must
/// hold for `items`.
///
/// First whole chunks are removed (halving the chunk size down to one, as Zeller's ddmin
/// does with complements), single items until none can go.
pub fn shrink<T: Clone>(items: &[T], fails: impl Fn(&[T]) -> bool) -> Vec<T> {
    let mut kept: Vec<T> = items.to_vec();
    let mut chunk = kept.len().div_ceil(2).max(1);
    loop {
        let mut start = 0;
        let mut removed = false;
        while start < kept.len() {
            let end = (start + chunk).min(kept.len());
            let candidate: Vec<T> = kept[..start].iter().chain(&kept[end..]).cloned().collect();
            if fails(&candidate) {
                kept = candidate;
                removed = true;
            } else {
                start = end;
            }
        }
        if chunk == 1 {
            if removed {
                continue;
            }
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::shrink;

    #[test]
    fn keeps_exactly_the_items_the_failure_needs() {
        let items: Vec<u32> = (0..100).collect();
        let kept = shrink(&items, |s| s.contains(&17) && s.contains(&83));
        assert_eq!(kept, vec![17, 83]);
    }

    #[test]
    fn a_single_needed_item_is_kept() {
        let kept = shrink(&[1, 2, 3], |s| s.contains(&2));
        assert_eq!(kept, vec![2]);
    }
}
