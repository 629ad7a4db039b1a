package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
)

// ManifestPath is where the host puts the Manifest in the initramfs.
const ManifestPath = "/kscope-vm.json"

// Manifest is what the host (package vm) tells the guest about its boot.
type Manifest struct {
	// Token is unique per boot; it is part of the exit marker, so that no
	// other console output can pass for it.
	Token string `json:"token"`
	// Modules are paths (in the initramfs) of uncompressed kernel modules,
	// in load order: every module comes after its dependencies.
	Modules []string `json:"modules,omitempty"`
	// Disks are mounted after the modules are loaded.
	Disks []Disk `json:"disks,omitempty"`
}

// Disk is a file system the host made and attached as a virtio disk.
type Disk struct {
	Serial  string `json:"serial"`  // the virtio-blk serial, to find the device (/sys/block/vdX/serial)
	FSType  string `json:"fstype"`  // e.g. "ext4", "xfs"
	Mount   string `json:"mount"`   // absolute mount point, created if missing
	Options string `json:"options"` // mount(2) data, e.g. "data=writeback"
}

// ReadManifest reads the manifest at path.
func ReadManifest(path string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, fmt.Errorf("guest: manifest: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("guest: manifest %s: %w", path, err)
	}
	return m, nil
}

// markerPrefix starts the line that reports the guest's exit code.
const markerPrefix = "KSCOPE-VM-EXIT"

// Marker is the console line by which the guest reports its exit code.
func Marker(token string, code int) string {
	return markerPrefix + " " + token + " " + strconv.Itoa(code)
}

// ParseMarker finds the last exit marker with token in console output and
// returns its code. It need not start a line: the kernel's console output
// may precede it on the same line.
func ParseMarker(console, token string) (code int, ok bool) {
	re := regexp.MustCompile(regexp.QuoteMeta(markerPrefix+" "+token+" ") + `(-?[0-9]+)`)
	all := re.FindAllStringSubmatch(console, -1)
	if len(all) == 0 {
		return 0, false
	}
	code, err := strconv.Atoi(all[len(all)-1][1])
	if err != nil {
		return 0, false
	}
	return code, true
}
