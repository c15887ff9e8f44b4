//! Work spread over a few threads, the one way zot does it: rayon's pools, sized for each
//! use (the copy's threads in `source/copy_tree.rs`, the staging of `sync`, the hashing of
//! a file list, doctor's checks). A pool that cannot be started leaves the work to the
//! calling thread.

use rayon::prelude::*;

/// A pool of `threads` threads named `name`; `None` when they cannot be started.
pub(crate) fn pool(threads: usize, name: &'static str) -> Option<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(move |_| name.into())
        .build()
        .ok()
}

/// `work` done for each of `items` on up to `threads` threads, each thread with a state of
/// its own made by `init` (an open cache, a buffer) for the items it takes; the results in
/// the items' order.
pub(crate) fn map_each<T, S, R>(
    items: &[T],
    threads: usize,
    name: &'static str,
    init: impl Fn() -> S + Sync + Send,
    work: impl Fn(&mut S, &T) -> R + Sync + Send,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let threads = threads.min(items.len());
    if let Some(pool) = (threads > 1).then(|| pool(threads, name)).flatten() {
        return pool.install(|| {
            items
                .par_iter()
                .with_max_len(1)
                .map_init(&init, |state, item| work(state, item))
                .collect()
        });
    }
    let mut state = init();
    items.iter().map(|item| work(&mut state, item)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items_whatever_the_threads() {
        let items: Vec<u32> = (0..200).collect();
        for threads in [0, 1, 2, 7] {
            let doubled = map_each(&items, threads, "test", || (), |(), n| n * 2);
            assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
        }
    }
}
