package vm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kernel is an unpacked kernel package (scripts/vm-kernel.sh).
type kernel struct {
	release string // e.g. 6.1.0-56-cloud-amd64
	vmlinuz string
	modDir  string            // lib/modules/<release>
	config  map[string]string // CONFIG_X -> "y", "m", ...; absent when not set
	paths   map[string]string // module name -> path relative to modDir
	deps    map[string][]string
	builtin map[string]bool
}

// loadKernel reads the kernel in dir: boot/vmlinuz-R, boot/config-R and
// lib/modules/R with modules.dep and modules.builtin.
func loadKernel(dir string) (*kernel, error) {
	images, err := filepath.Glob(filepath.Join(dir, "boot", "vmlinuz-*"))
	if err != nil || len(images) != 1 {
		return nil, fmt.Errorf("vm: kernel dir %s: want one boot/vmlinuz-*, found %d (make it with scripts/vm-kernel.sh)", dir, len(images))
	}
	k := &kernel{vmlinuz: images[0], release: strings.TrimPrefix(filepath.Base(images[0]), "vmlinuz-")}
	if k.config, err = readConfig(filepath.Join(dir, "boot", "config-"+k.release)); err != nil {
		return nil, err
	}
	for _, d := range []string{"lib/modules", "usr/lib/modules"} {
		p := filepath.Join(dir, d, k.release)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			k.modDir = p
			break
		}
	}
	if k.modDir == "" {
		return nil, fmt.Errorf("vm: kernel dir %s: no lib/modules/%s", dir, k.release)
	}
	if k.paths, k.deps, err = readModulesDep(filepath.Join(k.modDir, "modules.dep")); err != nil {
		return nil, err
	}
	if k.builtin, err = readBuiltin(filepath.Join(k.modDir, "modules.builtin")); err != nil {
		return nil, err
	}
	return k, nil
}

// readConfig parses a kernel .config: CONFIG_X=VALUE lines.
func readConfig(path string) (map[string]string, error) {
	cfg := map[string]string{}
	err := eachLine(path, func(line string) {
		if name, val, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "CONFIG_") {
			cfg[name] = strings.Trim(val, `"`)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("vm: kernel config: %w", err)
	}
	return cfg, nil
}

// readModulesDep parses modules.dep ("kernel/a/x.ko: kernel/b/y.ko ...").
func readModulesDep(path string) (paths map[string]string, deps map[string][]string, err error) {
	paths, deps = map[string]string{}, map[string][]string{}
	err = eachLine(path, func(line string) {
		mod, rest, ok := strings.Cut(line, ":")
		if !ok {
			return
		}
		name := moduleName(mod)
		paths[name] = mod
		for _, d := range strings.Fields(rest) {
			deps[name] = append(deps[name], moduleName(d))
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("vm: %w (scripts/vm-kernel.sh makes it with depmod)", err)
	}
	return paths, deps, nil
}

// readBuiltin parses modules.builtin (one kernel/a/x.ko a line).
func readBuiltin(path string) (map[string]bool, error) {
	b := map[string]bool{}
	err := eachLine(path, func(line string) { b[moduleName(line)] = true })
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	return b, nil
}

func eachLine(path string, f func(string)) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			f(line)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// moduleName is the module name of a path or name: "kernel/fs/xfs/xfs.ko.xz"
// -> "xfs"; dashes are underscores, as the kernel has them.
func moduleName(s string) string {
	s = filepath.Base(strings.TrimSpace(s))
	for _, ext := range []string{".xz", ".zst", ".gz"} {
		s = strings.TrimSuffix(s, ext)
	}
	return strings.ReplaceAll(strings.TrimSuffix(s, ".ko"), "-", "_")
}

// need is a kernel feature: a config symbol and the module that has it
// when the symbol is "m".
type need struct{ symbol, module string }

// fsType is what vm knows of a file system.
type fsType struct {
	mkfs      []string // command and the arguments that make it quiet and overwrite
	defaultMB int
	minMB     int
	needs     []need
}

func fsTypeOf(name string) (fsType, bool) {
	// Both checksum metadata with crc32c, which the kernel would otherwise
	// request_module (and the guest has no modprobe).
	crc := need{"CONFIG_CRYPTO_CRC32C", "crc32c_generic"}
	switch name {
	case "ext4":
		return fsType{mkfs: []string{"mkfs.ext4", "-F", "-q"}, defaultMB: 64, minMB: 8,
			needs: []need{{"CONFIG_EXT4_FS", "ext4"}, crc}}, true
	case "xfs":
		return fsType{mkfs: []string{"mkfs.xfs", "-f", "-q"}, defaultMB: 300, minMB: 300,
			needs: []need{{"CONFIG_XFS_FS", "xfs"}, crc}}, true
	}
	return fsType{}, false
}

// modulesFor returns the module files that cfg's boot needs, in load
// order: what its disks need that the kernel has as modules, then
// cfg.Modules, each after its dependencies.
func (k *kernel) modulesFor(cfg Config) ([]string, error) {
	var needs []need
	if len(cfg.Disks) > 0 {
		needs = append(needs, need{"CONFIG_VIRTIO_PCI", "virtio_pci"}, need{"CONFIG_VIRTIO_BLK", "virtio_blk"})
	}
	for _, d := range cfg.Disks {
		fs, _ := fsTypeOf(d.FSType)
		needs = append(needs, fs.needs...)
	}
	var names []string
	for _, n := range needs {
		switch k.config[n.symbol] {
		case "y":
		case "m":
			names = append(names, n.module)
		default:
			return nil, fmt.Errorf("vm: kernel %s has no %s (needed for %s)", k.release, n.symbol, n.module)
		}
	}
	rel, err := k.loadOrder(append(names, cfg.Modules...))
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(rel))
	for i, r := range rel {
		paths[i] = filepath.Join(k.modDir, r)
	}
	return paths, nil
}

// loadOrder returns the paths of the named modules and of their
// dependencies, each after its dependencies; built-in ones are left out.
func (k *kernel) loadOrder(names []string) ([]string, error) {
	var order []string
	seen := map[string]bool{}
	var visit func(name string, from []string) error
	visit = func(name string, from []string) error {
		if seen[name] {
			return nil
		}
		seen[name] = true
		path, ok := k.paths[name]
		if !ok {
			if k.builtin[name] {
				return nil
			}
			via := ""
			if len(from) > 0 {
				via = " (needed by " + strings.Join(from, " <- ") + ")"
			}
			return fmt.Errorf("vm: kernel %s has no module %s%s", k.release, name, via)
		}
		for _, d := range k.deps[name] {
			if err := visit(d, append([]string{name}, from...)); err != nil {
				return err
			}
		}
		order = append(order, path)
		return nil
	}
	for _, n := range names {
		if err := visit(moduleName(n), nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}
