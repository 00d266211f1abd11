//! One spare byte buffer per thread: the stdin payload's buffer, once parsed, is kept here and a
//! copy of the prompt of the same size is made in it, in pages already touched. Each fresh page
//! costs a fault (several microseconds on a virtual machine), and a 200 KB prompt otherwise pays
//! for about fifty more. It holds no text past a copy: the buffer is cleared before it is kept
//! or handed out, and it must never be read as anything but spare room.

use std::cell::Cell;

thread_local! {
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Keeps `buffer`'s room (its bytes are dropped) for the next [`string_of`] on this thread.
pub fn keep(mut buffer: Vec<u8>) {
    buffer.clear();
    SPARE.with(|s| s.set(buffer));
}

/// `text` as an owned `String`, in the kept buffer when it has the room (the buffer is used
/// once), else in a new allocation.
#[must_use]
pub fn string_of(text: &str) -> String {
    let spare = SPARE.with(Cell::take);
    if spare.capacity() < text.len() {
        SPARE.with(|s| s.set(spare));
        return text.to_owned();
    }
    // Cleared when kept: an empty buffer is valid UTF-8 whatever its capacity.
    let mut out = String::from_utf8(spare).unwrap_or_default();
    out.clear();
    out.push_str(text);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_buffer_holds_the_copy_once_and_nothing_of_what_it_held() {
        let mut payload = Vec::with_capacity(4096);
        payload.extend_from_slice(b"{\"prompt\":\"old text\"}");
        let room = payload.as_ptr();
        keep(payload);
        let copy = string_of("the prompt");
        assert_eq!(copy, "the prompt");
        // The copy is made in the kept buffer's pages.
        assert_eq!(copy.as_ptr(), room);
        assert!(copy.capacity() >= 4096);
        // Used once: the next copy gets its own allocation.
        let other = string_of("another prompt");
        assert_eq!(other, "another prompt");
        assert_ne!(other.as_ptr(), room);
    }

    #[test]
    fn a_buffer_too_small_stays_kept_for_a_smaller_text() {
        keep(Vec::with_capacity(8));
        let long = "x".repeat(64);
        assert_eq!(string_of(&long), long);
        assert_eq!(string_of("short"), "short");
    }
}
