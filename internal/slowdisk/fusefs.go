package slowdisk

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// DeviceFile is the one file of the emulator's file system, the loop
// device's backing file.
const DeviceFile = "device"

// root is the emulator's file system: a directory with DeviceFile.
type root struct {
	fs.Inode
	img  *os.File
	hold *holder
}

var _ fs.NodeOnAdder = (*root)(nil)

func (r *root) OnAdd(ctx context.Context) {
	node := &imageNode{img: r.img, hold: r.hold}
	ch := r.NewPersistentInode(ctx, node, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2})
	r.AddChild(DeviceFile, ch, false)
}

// imageNode is DeviceFile: the image's size and owner, its bytes
// through heldFile.
type imageNode struct {
	fs.Inode
	img  *os.File
	hold *holder
}

var (
	_ fs.NodeGetattrer = (*imageNode)(nil)
	_ fs.NodeOpener    = (*imageNode)(nil)
)

func (n *imageNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(n.img.Fd()), &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStat(&st)
	out.Ino = 2
	return 0
}

// Open lets direct writes run in parallel (FOPEN_PARALLEL_DIRECT_WRITES:
// otherwise FUSE takes the inode's lock for each, one request at a
// time). It does not set FOPEN_DIRECT_IO: with it the kernel turns the
// loop device's asynchronous direct I/O into synchronous requests, one
// at a time per loop worker; without it an O_DIRECT open (the loop
// device's, with direct I/O on) reaches the holder asynchronously
// (CAP_ASYNC_DIO), as many at once as the loop device's queue sends.
func (n *imageNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &heldFile{img: n.img, hold: n.hold}, fuse.FOPEN_PARALLEL_DIRECT_WRITES, 0
}

// heldFile reads and writes the image, each request held by the holder.
// It is not a fs.LoopbackFile: that one offers the kernel FUSE
// passthrough, which would bypass the holder.
type heldFile struct {
	img  *os.File
	hold *holder
}

var (
	_ fs.FileReader  = (*heldFile)(nil)
	_ fs.FileWriter  = (*heldFile)(nil)
	_ fs.FileFsyncer = (*heldFile)(nil)
	_ fs.FileFlusher = (*heldFile)(nil)
)

func (f *heldFile) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var n int
	var err error
	f.hold.do(ctx, OpRead, func() { n, err = f.img.ReadAt(dest, off) })
	if err != nil && n == 0 && !isEOF(err) {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (f *heldFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var n int
	var err error
	f.hold.do(ctx, OpWrite, func() { n, err = f.img.WriteAt(data, off) })
	if err != nil {
		return uint32(n), fs.ToErrno(err)
	}
	return uint32(n), 0
}

// Fsync is the loop device's flush (a preflush, or a FUA write's
// postflush): held for a flush latency. The image is not synced: the
// emulated device's durability is not the lab's concern, and the host
// disk's own flush time would add to the profile's.
func (f *heldFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f.hold.do(ctx, OpFlush, func() {})
	return 0
}

// Flush is close(2) of a descriptor, not a device flush.
func (f *heldFile) Flush(ctx context.Context) syscall.Errno { return 0 }

func isEOF(err error) bool { return errors.Is(err, io.EOF) }
