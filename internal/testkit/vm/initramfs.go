package vm

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/kscope-dev/kscope/internal/testkit/vm/guest"
)

// guestModDir is where the initramfs holds the modules.
const guestModDir = "/lib/modules"

// buildInitramfs writes dir/initramfs.cpio (newc, by the cpio tool) with
// init as /init, the modules (decompressed) in guestModDir and m, which it
// completes with the modules' guest paths, at guest.ManifestPath.
func buildInitramfs(ctx context.Context, dir, init string, modules []string, m guest.Manifest) (string, error) {
	root := filepath.Join(dir, "root")
	for _, d := range []string{"dev", "proc", "sys", "tmp", "mnt", strings.TrimPrefix(guestModDir, "/")} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return "", fmt.Errorf("vm: initramfs: %w", err)
		}
	}
	if err := copyFile(init, filepath.Join(root, "init"), 0o755); err != nil {
		return "", fmt.Errorf("vm: initramfs: init: %w", err)
	}
	m.Modules = nil
	for _, mod := range modules {
		name := moduleName(mod) + ".ko"
		if err := decompressModule(mod, filepath.Join(root, guestModDir, name)); err != nil {
			return "", err
		}
		m.Modules = append(m.Modules, guestModDir+"/"+name)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", fmt.Errorf("vm: manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(root, guest.ManifestPath), b, 0o644); err != nil {
		return "", fmt.Errorf("vm: manifest: %w", err)
	}

	// cpio reads the names to archive from stdin, relative to root.
	var names bytes.Buffer
	err = filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root {
			rel, _ := filepath.Rel(root, p)
			names.WriteString(rel + "\n")
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("vm: initramfs: %w", err)
	}
	cpioBin, err := tool("cpio")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "initramfs.cpio")
	f, err := os.Create(out)
	if err != nil {
		return "", fmt.Errorf("vm: initramfs: %w", err)
	}
	defer f.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, cpioBin, "-o", "-H", "newc", "-R", "0:0", "--quiet")
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = root, &names, f, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("vm: cpio: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("vm: initramfs: %w", err)
	}
	return out, nil
}

// decompressModule writes module src to dst uncompressed, so the guest
// kernel needs no module decompression of its own.
func decompressModule(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("vm: module: %w", err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("vm: module: %w", err)
	}
	defer out.Close()
	switch {
	case strings.HasSuffix(src, ".ko"):
		_, err = io.Copy(out, in)
	case strings.HasSuffix(src, ".ko.zst"):
		var zr *zstd.Decoder
		if zr, err = zstd.NewReader(in); err == nil {
			_, err = io.Copy(out, zr)
			zr.Close()
		}
	case strings.HasSuffix(src, ".ko.gz"):
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(in); err == nil {
			_, err = io.Copy(out, zr)
		}
	case strings.HasSuffix(src, ".ko.xz"):
		// No xz decoder among kscope's dependencies: xz-utils' (which
		// scripts/vm-kernel.sh installs).
		var xz string
		if xz, err = tool("xz"); err == nil {
			var stderr bytes.Buffer
			cmd := exec.Command(xz, "-dc")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, &stderr
			if err = cmd.Run(); err != nil {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
			}
		}
	default:
		err = fmt.Errorf("unknown module file type")
	}
	if err == nil {
		err = out.Close()
	}
	if err != nil {
		return fmt.Errorf("vm: module %s: %w", src, err)
	}
	return nil
}

// checkStatic makes sure path is an x86-64 executable without a dynamic
// loader: the initramfs has no libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("vm: init %s: %w", path, err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 || (f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN) {
		return fmt.Errorf("vm: init %s is not an x86-64 executable", path)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("vm: init %s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tool finds a system tool on PATH or in the sbin dirs a non-login shell
// may lack.
func tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("vm: %s not found (scripts/vm-kernel.sh installs it)", name)
}
