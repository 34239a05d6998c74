//! Locking the runtime's shared state: one helper per kind of lock, each recovering a lock
//! poisoned by a panic elsewhere (an author's tool that panicked while the runtime held a
//! lock must not take the connection down with it: what the lock guards is kept consistent
//! by the code holding it, never left half-written across an `.await` or a call into author
//! code).

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `mutex` locked, poisoned or not.
pub(crate) fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` read, poisoned or not.
#[allow(dead_code)] // Not every feature combination reads one.
pub(crate) fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// `lock` written, poisoned or not.
#[allow(dead_code)] // Not every feature combination writes one.
pub(crate) fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}
