package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// image is a disk image made for a boot.
type image struct {
	path   string
	serial string // the virtio-blk serial the guest finds it by
}

// makeDisks makes a sparse image file in dir with the file system of each
// of disks (which withDefaults has checked).
func makeDisks(ctx context.Context, dir string, disks []Disk) ([]image, error) {
	images := make([]image, len(disks))
	for i, d := range disks {
		fs, _ := fsTypeOf(d.FSType)
		img := image{
			path:   filepath.Join(dir, fmt.Sprintf("disk%d.%s", i, d.FSType)),
			serial: fmt.Sprintf("kscope-disk%d", i), // virtio-blk serials have at most 20 bytes
		}
		f, err := os.Create(img.path)
		if err != nil {
			return nil, fmt.Errorf("vm: disk %d: %w", i, err)
		}
		err = f.Truncate(int64(d.SizeMB) << 20)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("vm: disk %d: %w", i, err)
		}
		bin, err := tool(fs.mkfs[0])
		if err != nil {
			return nil, err
		}
		args := append(append(append([]string{}, fs.mkfs[1:]...), d.MkfsArgs...), img.path)
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("vm: disk %d: %s %s: %w: %s", i, fs.mkfs[0], strings.Join(args, " "), err, strings.TrimSpace(out.String()))
		}
		images[i] = img
	}
	return images, nil
}
