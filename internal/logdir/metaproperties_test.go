package logdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadBrokerMeta(t *testing.T) {
	tests := []struct {
		name, text string
		want       BrokerMeta
		wantErr    bool
	}{
		{"kraft", "#\n#Tue Nov 25 10:00:00 UTC 2026\nnode.id=2\ndirectory.id=abc\nversion=1\ncluster.id=q1Sh-9_ISia_zwGINzRvyQ\n", BrokerMeta{2, "q1Sh-9_ISia_zwGINzRvyQ"}, false},
		{"zookeeper", "version=0\nbroker.id=7\ncluster.id=xyz\n", BrokerMeta{7, "xyz"}, false},
		{"spaces", "node.id = 3\r\ncluster.id = c\r\n", BrokerMeta{3, "c"}, false},
		{"no id", "version=1\ncluster.id=c\n", BrokerMeta{}, true},
		{"bad id", "node.id=-4\n", BrokerMeta{}, true},
		{"huge id", "node.id=99999999999\n", BrokerMeta{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := ReadBrokerMeta(dir)
			if (err != nil) != tt.wantErr || err == nil && got != tt.want {
				t.Errorf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := ReadBrokerMeta(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
}
