package logdir

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	long := strings.Repeat("t", 255-len("-3.0123456789abcdef0123456789abcdef-delete"))
	tests := []struct {
		path string
		want Location
	}{
		{"/var/kafka/orders-3/00000000000000001234.log",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindLog, BaseOffset: 1234}},
		{"/var/kafka/orders-3/00000000000000001234.index",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindIndex, BaseOffset: 1234}},
		{"/var/kafka/orders-3/00000000000000001234.timeindex",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindTimeIndex, BaseOffset: 1234}},
		{"/var/kafka/orders-3/00000000000000001234.txnindex",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindTxnIndex, BaseOffset: 1234}},
		{"/var/kafka/orders-3/00000000000000005000.snapshot",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindSnapshot, BaseOffset: 5000}},
		{"/var/kafka/orders-3/09223372036854775807.log",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindLog, BaseOffset: 9223372036854775807}},
		{"/var/kafka/orders-3/00000000000000000000.log.deleted",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindLog, BaseOffset: 0, FileSuffix: ".deleted"}},
		{"/var/kafka/orders-3/00000000000000000007.index.swap",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindIndex, BaseOffset: 7, FileSuffix: ".swap"}},
		{"/var/kafka/orders-3/00000000000000000007.log.cleaned",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindLog, BaseOffset: 7, FileSuffix: ".cleaned"}},
		{"/var/kafka/orders-3/partition.metadata",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindOther, BaseOffset: -1}},
		{"/var/kafka/orders-3/leader-epoch-checkpoint",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindOther, BaseOffset: -1}},
		{"/var/kafka/orders-3/1234.log", // not 20 digits
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindOther, BaseOffset: -1}},
		{"/var/kafka/orders-3/99999999999999999999.log", // beyond int64
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindOther, BaseOffset: -1}},
		{"/var/kafka/orders-3/00000000000000001234.log.bak",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindOther, BaseOffset: -1}},
		{"/var/kafka/orders-3",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindDir, BaseOffset: -1}},
		{"/var/kafka/orders-3/",
			Location{Topic: "orders", Partition: 3, Dir: "/var/kafka/orders-3", LogDir: "/var/kafka", Kind: KindDir, BaseOffset: -1}},
		{"orders-3",
			Location{Topic: "orders", Partition: 3, Dir: "orders-3", LogDir: ".", Kind: KindDir, BaseOffset: -1}},
		{"orders-3/00000000000000000000.log",
			Location{Topic: "orders", Partition: 3, Dir: "orders-3", LogDir: ".", Kind: KindLog, BaseOffset: 0}},
		// Topics may contain '-' and '.': the partition follows the last '-'.
		{"/d/my-topic.v2-12/00000000000000000042.log",
			Location{Topic: "my-topic.v2", Partition: 12, Dir: "/d/my-topic.v2-12", LogDir: "/d", Kind: KindLog, BaseOffset: 42}},
		{"/d/a-1-2",
			Location{Topic: "a-1", Partition: 2, Dir: "/d/a-1-2", LogDir: "/d", Kind: KindDir, BaseOffset: -1}},
		{"/d/__consumer_offsets-49",
			Location{Topic: "__consumer_offsets", Partition: 49, Dir: "/d/__consumer_offsets-49", LogDir: "/d", Kind: KindDir, BaseOffset: -1}},
		{"/d/orders-7.0123456789abcdef0123456789abcdef-delete/00000000000000000000.log",
			Location{Topic: "orders", Partition: 7, Dir: "/d/orders-7.0123456789abcdef0123456789abcdef-delete", LogDir: "/d",
				Suffix: DeleteDirSuffix, UniqueID: "0123456789abcdef0123456789abcdef", Kind: KindLog, BaseOffset: 0}},
		{"/d/my-topic.v2-0.0123456789abcdef0123456789abcdef-future",
			Location{Topic: "my-topic.v2", Partition: 0, Dir: "/d/my-topic.v2-0.0123456789abcdef0123456789abcdef-future", LogDir: "/d",
				Suffix: FutureDirSuffix, UniqueID: "0123456789abcdef0123456789abcdef", Kind: KindDir, BaseOffset: -1}},
		{"/d/orders-1.abc-stray",
			Location{Topic: "orders", Partition: 1, Dir: "/d/orders-1.abc-stray", LogDir: "/d",
				Suffix: StrayDirSuffix, UniqueID: "abc", Kind: KindDir, BaseOffset: -1}},
		// A topic whose name ends like a suffix is still a plain directory.
		{"/d/x-delete-0",
			Location{Topic: "x-delete", Partition: 0, Dir: "/d/x-delete-0", LogDir: "/d", Kind: KindDir, BaseOffset: -1}},
		// Kafka shortens the topic to keep -delete names within 255 bytes.
		{"/d/" + long + "-3.0123456789abcdef0123456789abcdef-delete",
			Location{Topic: long, Partition: 3, Dir: "/d/" + long + "-3.0123456789abcdef0123456789abcdef-delete", LogDir: "/d",
				Suffix: DeleteDirSuffix, UniqueID: "0123456789abcdef0123456789abcdef", TopicMaybeTruncated: true, Kind: KindDir, BaseOffset: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			tt.want.Dir, tt.want.LogDir = filepath.FromSlash(tt.want.Dir), filepath.FromSlash(tt.want.LogDir)
			got, err := ParsePath(filepath.FromSlash(tt.path))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParsePathErrors(t *testing.T) {
	tests := []string{
		"/",
		"",
		"/var/kafka/meta.properties",
		"/var/kafka/lost+found/x",
		"/var/kafka/orders/00000000000000000000.log", // no partition
		"/var/kafka/orders-/00000000000000000000.log",
		"/var/kafka/-3/00000000000000000000.log",
		"/var/kafka/orders-x",
		"/var/kafka/orders-+3",
		"/var/kafka/orders-2147483648", // beyond int32
		"/var/kafka/orders-3.-delete",  // empty unique id
		"/var/kafka/orders-3abc-delete",
		"/var/kafka/orders.abc-delete", // no partition
		"/var/kafka/orders-3.abc-future-x",
		"/var/kafka/my topic-3",
		"/var/kafka/or$ders-3",
		"/var/kafka/..-3",
		"/var/kafka/" + strings.Repeat("t", 250) + "-0",
	}
	for _, path := range tests {
		t.Run(path, func(t *testing.T) {
			if loc, err := ParsePath(path); err == nil {
				t.Errorf("ParsePath = %+v, want an error", loc)
			} else if !strings.HasPrefix(err.Error(), "logdir: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindOther: "other", KindDir: "dir", KindLog: "log", KindIndex: "index",
		KindTimeIndex: "timeindex", KindTxnIndex: "txnindex", KindSnapshot: "snapshot", Kind(99): "kind(99)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(k), k.String(), want)
		}
	}
}
