package event

import "time"

// PageCacheAdds is a run of pages one broker thread added to the page
// cache reading one file, traced by kscope iotrace (bpf/iopcache.bpf.c,
// the tracepoint filemap:mm_filemap_add_to_page_cache): pages that were
// not in the page cache, read from disk. A network thread's run while a
// consumer's fetch response left is that fetch's data coming from disk
// (sendfile of cold data). A run ends when the thread turns to another
// file or adds nothing for a millisecond.
type PageCacheAdds struct {
	Kind  string    `json:"kind"` // KindPageCacheAdds
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	TID   int       `json:"tid"`
	// Thread is the thread's name.
	Thread string `json:"thread"`
	// Dev is the file's device, "major:minor"; Inode its inode number.
	Dev   string `json:"dev"`
	Inode uint64 `json:"inode"`
	// Pages counts the pages added (a large folio counts its pages).
	Pages int64 `json:"pages"`
}

// KindPageCacheAdds marks a PageCacheAdds.
const KindPageCacheAdds = "page_cache_adds"

// PageCacheAddsKind is the kind of PageCacheAdds lines, in the journal
// stream with the other kernel evidence.
var PageCacheAddsKind = NewKind(StreamJournal, func(p *PageCacheAdds) Times {
	return Times{Field: "start", Start: p.Start, End: p.End}
}, KindPageCacheAdds)
