//! Head-table pages: 255 bucket entries of 16 bytes and a trailer holding
//! the page's CRC-32 and number (`docs/stackdb-format.md`, "The head table").

/// One bucket's entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Entry {
    /// The offset of the bucket's newest record (0 = empty; records start at multiples of 8), and in
    /// the low three bits how many splits in a row have left its stack shared ([`Entry::shared`]).
    link: u64,
    /// Two bits per key ever pushed on the stack since its last rebuild.
    pub bloom: u64,
}

/// The bits of [`Entry`]'s link that hold [`Entry::shared`].
const SHARED_BITS: u64 = 7;
/// The most splits in a row that may leave a stack shared.
pub const MAX_SHARED: u8 = SHARED_BITS as u8;

impl Entry {
    /// The entry of a stack headed by the record at `head` (a multiple of 8) that `shared` splits in a
    /// row have left shared (at most [`MAX_SHARED`]).
    pub fn new(head: u64, bloom: u64, shared: u8) -> Entry {
        debug_assert!(head & SHARED_BITS == 0 && shared <= MAX_SHARED);
        Entry { link: head | u64::from(shared), bloom }
    }

    /// The entry as stored: [`Entry::head`] and [`Entry::shared`] in one word, then the Bloom word.
    pub(crate) fn from_words(link: u64, bloom: u64) -> Entry {
        Entry { link, bloom }
    }

    /// The link word as stored.
    pub(crate) fn link(&self) -> u64 {
        self.link
    }

    /// Offset of the bucket's newest record (0 = empty).
    pub fn head(&self) -> u64 {
        self.link & !SHARED_BITS
    }

    /// How many splits in a row have left this stack shared with its sibling instead of copying it: 0
    /// when it holds only this bucket's records, `s` when it may hold those of `2^s` buckets, which a
    /// walk for this bucket's own records passes over (`split.rs`).
    pub fn shared(&self) -> u8 {
        (self.link & SHARED_BITS) as u8
    }

    /// The entry after a record at `offset` of key hash `h` is pushed on the stack.
    pub(crate) fn pushed(&self, offset: u64, h: u64) -> Entry {
        Entry::new(offset, self.bloom | crate::hash::bloom_bits(h), self.shared())
    }

    /// Whether the stack may hold a key of hash `h`: it is not empty and
    /// its Bloom word has the key's two bits.
    pub fn may_hold(&self, h: u64) -> bool {
        let bits = crate::hash::bloom_bits(h);
        self.head() != 0 && self.bloom & bits == bits
    }
}

/// Bytes per page.
pub const PAGE: usize = 4096;
/// Bucket entries per page.
pub const ENTRIES_PER_PAGE: u64 = 255;
/// Bytes of a bucket's entry.
pub(crate) const ENTRY: usize = 16;

/// The page holding `bucket` (page 0 is the header page) and the bucket's
/// slot in it.
pub(crate) fn locate(bucket: u64) -> (u64, usize) {
    (1 + bucket / ENTRIES_PER_PAGE, (bucket % ENTRIES_PER_PAGE) as usize)
}

/// Where `bucket`'s entry lies in the head-table file.
pub(crate) fn entry_offset(bucket: u64) -> u64 {
    let (page_no, slot) = locate(bucket);
    page_no * PAGE as u64 + (slot * ENTRY) as u64
}

/// The entry in `slot` of `page`.
pub(crate) fn read_entry(page: &[u8], slot: usize) -> Entry {
    let at = slot * ENTRY;
    Entry::from_words(
        u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes")),
        u64::from_le_bytes(page[at + 8..at + 16].try_into().expect("8 bytes")),
    )
}

/// Sets the entry in `slot` of `page`.
pub(crate) fn write_entry(page: &mut [u8], slot: usize, entry: Entry) {
    let at = slot * ENTRY;
    page[at..at + 8].copy_from_slice(&entry.link().to_le_bytes());
    page[at + 8..at + 16].copy_from_slice(&entry.bloom.to_le_bytes());
}

/// Whether a page read back is page `page_no`, intact.
pub(crate) fn holds(page: &[u8], page_no: u64) -> bool {
    let stored = u32::from_le_bytes(page[PAGE - 16..PAGE - 12].try_into().expect("4 bytes"));
    let number = u64::from_le_bytes(page[PAGE - 8..].try_into().expect("8 bytes"));
    number == page_no && stored == crc(page, page_no)
}

fn crc(page: &[u8], page_no: u64) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&page[..PAGE - 16]);
    h.update(&page_no.to_le_bytes());
    h.finalize()
}

/// Writes a page's trailer: its CRC and number.
pub(crate) fn seal(page: &mut [u8], page_no: u64) {
    page[PAGE - 8..].copy_from_slice(&page_no.to_le_bytes());
    let crc = crc(page, page_no);
    page[PAGE - 16..PAGE - 12].copy_from_slice(&crc.to_le_bytes());
}

/// A set of page numbers, one bit each, walked in order.
#[derive(Default)]
pub(crate) struct PageSet(Vec<u64>);

impl PageSet {
    pub(crate) fn insert(&mut self, n: u64) {
        let (word, bit) = ((n / 64) as usize, n % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    pub(crate) fn contains(&self, n: u64) -> bool {
        self.0.get((n / 64) as usize).is_some_and(|w| (w >> (n % 64)) & 1 == 1)
    }

    pub(crate) fn remove(&mut self, n: u64) {
        if let Some(w) = self.0.get_mut((n / 64) as usize) {
            *w &= !(1 << (n % 64));
        }
    }

    /// The smallest member in `from..to`.
    pub(crate) fn next_in(&self, from: u64, to: u64) -> Option<u64> {
        let mut n = from;
        while n < to {
            let word = self.0.get((n / 64) as usize)?;
            let rest = word >> (n % 64);
            if rest != 0 {
                let found = n + u64::from(rest.trailing_zeros());
                return (found < to).then_some(found);
            }
            n = (n / 64 + 1) * 64;
        }
        None
    }
}

/// The entries of one page set since it was last written: which slots, one
/// bit each, and their entries in slot order.
#[derive(Default)]
pub(crate) struct Waiting {
    slots: [u64; 4],
    entries: Vec<Entry>,
    /// The table's count of entries set when one of these was last set: a slice taken before
    /// then left the page waiting.
    pub(crate) set_at: u64,
}

/// Bytes of RAM a page with waiting entries costs besides the entries: its
/// slot in the map of such pages (with the map's spare room) and its
/// vector's allocation header.
pub(crate) const WAITING_PAGE_BYTES: usize = 160;

impl Waiting {
    /// Entries set in slots below `slot`: where `slot`'s entry is, or goes.
    fn rank(&self, slot: usize) -> usize {
        let (word, bit) = (slot / 64, slot % 64);
        let below: u32 = self.slots[..word].iter().map(|w| w.count_ones()).sum();
        (below + (self.slots[word] & ((1u64 << bit) - 1)).count_ones()) as usize
    }

    fn has(&self, slot: usize) -> bool {
        (self.slots[slot / 64] >> (slot % 64)) & 1 == 1
    }

    /// The entry waiting in `slot`, if one is.
    pub(crate) fn get(&self, slot: usize) -> Option<Entry> {
        self.has(slot).then(|| self.entries[self.rank(slot)])
    }

    /// Asks the CPU's cache for the entry waiting in `slot`, if one is (a hint; reads nothing).
    pub(crate) fn prefetch(&self, slot: usize) {
        if self.has(slot) {
            crate::map::prefetch((&raw const self.entries[self.rank(slot)]).cast());
        }
    }

    /// Sets `slot`'s entry; returns the bytes of RAM this took besides
    /// what the page held (0 when the slot was already waiting).
    pub(crate) fn set(&mut self, slot: usize, entry: Entry) -> usize {
        let at = self.rank(slot);
        if self.has(slot) {
            self.entries[at] = entry;
            return 0;
        }
        let before = self.entries.capacity();
        self.entries.insert(at, entry);
        self.slots[slot / 64] |= 1 << (slot % 64);
        (self.entries.capacity() - before) * std::mem::size_of::<Entry>()
    }

    /// Every waiting slot with its entry, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, Entry)> + '_ {
        let slots = self.slots.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 64 + bit
                })
            })
        });
        slots.zip(self.entries.iter().copied())
    }

    /// Bytes of RAM the page's entries hold.
    pub(crate) fn bytes(&self) -> usize {
        WAITING_PAGE_BYTES + self.entries.capacity() * std::mem::size_of::<Entry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_set_walks_its_members_in_order_within_a_range() {
        let mut s = PageSet::default();
        for n in [3, 64, 65, 200] {
            s.insert(n);
        }
        s.remove(64);
        assert!(s.contains(65) && !s.contains(64) && !s.contains(100_000));
        assert_eq!(s.next_in(0, 300), Some(3));
        assert_eq!(s.next_in(4, 300), Some(65));
        assert_eq!(s.next_in(66, 200), None);
        assert_eq!(s.next_in(66, 201), Some(200));
        assert_eq!(s.next_in(201, 10_000), None);
    }

    #[test]
    fn a_page_keeps_its_waiting_entries_in_slot_order() {
        let mut w = Waiting::default();
        let e = |h: u64| Entry::new(h * 8, h, (h % 8) as u8);
        assert!(w.set(254, e(254)) > 0, "the first entry allocates");
        for slot in [0, 64, 63] {
            w.set(slot, e(slot as u64));
        }
        assert_eq!(w.set(64, e(7)), 0);
        assert_eq!(w.get(64), Some(e(7)));
        assert_eq!(w.get(65), None);
        assert_eq!(w.iter().collect::<Vec<_>>(), vec![(0, e(0)), (63, e(63)), (64, e(7)), (254, e(254))]);
        assert_eq!(w.bytes(), WAITING_PAGE_BYTES + w.entries.capacity() * 16);
    }

    #[test]
    fn a_sealed_page_holds_only_under_its_own_number() {
        let mut page = vec![0u8; PAGE];
        write_entry(&mut page, 7, Entry::new(96, 5, 3));
        seal(&mut page, 3);
        assert!(holds(&page, 3) && !holds(&page, 4));
        assert_eq!(read_entry(&page, 7), Entry::new(96, 5, 3));
        page[100] ^= 1;
        assert!(!holds(&page, 3));
    }
}
