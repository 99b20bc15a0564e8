package dirsource

import (
	"io/fs"
	"syscall"
	"time"
)

// changeStat returns fi's inode change time, device and inode number; ok is false when fi
// does not carry them. Unlike the modification time, the change time cannot be set back by a tool
// that rewrites a file (cp -p, tar, rsync -t): it moves with every write and rename.
func changeStat(fi fs.FileInfo) (ctime time.Time, dev, ino uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, 0, 0, false
	}
	return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)), uint64(st.Dev), uint64(st.Ino), true // int32 fields on some platforms
}
