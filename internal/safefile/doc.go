// Package safefile opens the files kscope reads and writes the files it
// produces without harming anything it did not create.
//
// kscope runs as root, so a path it is handed may be a device node, a FIFO
// with no writer, a symlink to /dev/zero, a directory, or one of the same
// run's inputs. Open refuses what cannot be read as the caller needs it (a
// regular file, or a stream where a stream makes sense) and never blocks on
// a FIFO nobody writes to; a stream is read with an idle bound. Write
// replaces only a regular file or a new path, never an input of the run
// nor a file inside a recording the run reads, and writes through a
// temporary file so a reader never sees half an output.
package safefile
