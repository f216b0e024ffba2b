//! One stable sort for the whole crate, so that the binary holds its code once.
//!
//! The standard library's sort is generic: every element type and every key closure gets its own
//! copy, about 4 KB of code each, and fourteen call sites made some 56 KB of the static binary.
//! Here the standard sort runs on the items' positions alone, comparing them through one `&dyn
//! Fn`, and the items are then put in that order by swaps; what each call site instantiates is a
//! closure or two. The result is the standard sort's: stable, by the same comparison. The lists
//! sorted here are short (a server's fronts, a directory's entries, a screen row's panes, the
//! tasks and pipelines kept), so a dynamic call per comparison costs nothing one could measure.

use std::cmp::Ordering;

/// Sorts `items` in their own order, stable: what `items.sort()` does.
pub(crate) fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// Sorts `items` by `key`, stable: what `items.sort_by_key(key)` does.
pub(crate) fn sort_by_key<T, K: Ord>(items: &mut [T], key: impl Fn(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` by `compare`, stable: what `items.sort_by(compare)` does.
pub(crate) fn sort_by<T>(items: &mut [T], compare: impl Fn(&T, &T) -> Ordering) {
    let order = positions(items.len(), &|a, b| compare(&items[a], &items[b]));
    arrange(&order, &mut |a, b| items.swap(a, b));
}

/// The positions `0..len`, sorted (stable) by comparing the items at them.
fn positions(len: usize, compare: &dyn Fn(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

/// Moves the item first at `order[k]` to position `k`, for every `k`, with `swap`.
fn arrange(order: &[usize], swap: &mut dyn FnMut(usize, usize)) {
    // at[p] is the first position of the item now at p; now[i] is where the item first at i is.
    let mut at: Vec<usize> = (0..order.len()).collect();
    let mut now = at.clone();
    for (k, &wanted) in order.iter().enumerate() {
        let from = now[wanted];
        if from != k {
            swap(k, from);
            let displaced = at[k];
            (at[from], now[displaced]) = (displaced, from);
            (at[k], now[wanted]) = (wanted, k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator, so the cases are many and the same on every run.
    fn numbers(seed: u64, len: usize, range: u64) -> Vec<u64> {
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) % range
            })
            .collect()
    }

    #[test]
    fn sorts_as_the_standard_sort_does_keeping_equal_keys_in_order() {
        for (seed, len) in (0..200).map(|s| (s, (s as usize * 7) % 70)) {
            // Pairs of (key, first position): the position tells a stable sort from another.
            let items: Vec<(u64, usize)> = numbers(seed, len, 5).into_iter().zip(0..).collect();
            let mut ours = items.clone();
            sort_by_key(&mut ours, |&(key, _)| key);
            let mut standard = items.clone();
            standard.sort_by_key(|&(key, _)| key);
            assert_eq!(ours, standard, "seed {seed}, {len} items");
        }
    }

    #[test]
    fn sort_and_sort_by_order_as_ord_and_the_comparison_say() {
        let mut words = vec!["pear", "apple", "fig", "apple", "banana"];
        sort(&mut words);
        assert_eq!(words, ["apple", "apple", "banana", "fig", "pear"]);
        sort_by(&mut words, |a, b| b.len().cmp(&a.len()));
        assert_eq!(words, ["banana", "apple", "apple", "pear", "fig"]);
        let mut none: Vec<u8> = Vec::new();
        sort(&mut none);
        assert!(none.is_empty());
    }
}
