//! Progress of iterative solvers, reported to whoever runs the fit on this thread.
//!
//! A solver calls [`report`] once per iteration with its objective; it costs a thread-local
//! lookup when nobody listens. The runner wraps a long fit in [`observe`] and prints the
//! iteration, objective and elapsed time of fits that run longer than a few seconds. Work a
//! solver hands to other threads (rayon) reports nothing: only the fit's own loop is observed.

use std::cell::RefCell;

type Observer = Box<dyn FnMut(usize, f64)>;

thread_local! {
    static OBSERVER: RefCell<Option<Observer>> = const { RefCell::new(None) };
}

/// Runs `f` with `observer(iteration, objective)` receiving every [`report`] made on this
/// thread during `f` (the previous observer is restored afterwards, also on panic).
pub fn observe<R>(observer: impl FnMut(usize, f64) + 'static, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Observer>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            OBSERVER.with(|o| *o.borrow_mut() = prev);
        }
    }
    let prev = OBSERVER.with(|o| o.borrow_mut().replace(Box::new(observer)));
    let _restore = Restore(prev);
    f()
}

/// Reports that iteration `iteration` (1-based) ended with objective value `objective`.
pub fn report(iteration: usize, objective: f64) {
    OBSERVER.with(|o| {
        // a report from inside the observer itself is dropped rather than re-entered
        if let Ok(mut guard) = o.try_borrow_mut() {
            if let Some(cb) = guard.as_mut() {
                cb(iteration, objective);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn reports_reach_the_innermost_observer_of_this_thread_only() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        observe(
            move |i, f| s.lock().unwrap().push((i, f)),
            || {
                report(1, 3.0);
                let inner = Arc::new(Mutex::new(0));
                let k = inner.clone();
                observe(move |_, _| *k.lock().unwrap() += 1, || report(2, 2.0));
                assert_eq!(*inner.lock().unwrap(), 1);
                report(3, 1.0); // the outer observer is back
                std::thread::spawn(|| report(9, 9.0)).join().unwrap(); // another thread: nobody
            },
        );
        report(4, 0.0); // after observe: nobody
        assert_eq!(*seen.lock().unwrap(), vec![(1, 3.0), (3, 1.0)]);
    }

    #[test]
    fn the_observer_is_restored_after_a_panic() {
        let seen = Arc::new(Mutex::new(0));
        let s = seen.clone();
        observe(
            move |_, _| *s.lock().unwrap() += 1,
            || {
                let r = std::panic::catch_unwind(|| observe(|_, _| {}, || panic!("inside")));
                assert!(r.is_err());
                report(1, 0.0);
            },
        );
        assert_eq!(*seen.lock().unwrap(), 1);
    }
}
