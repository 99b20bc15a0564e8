package pgtest

import "syscall"

// shmDir is a memory file system on most Linux machines. Creating a database creates some
// 300 files, which takes 10 ms there and can take 150–300 ms on a virtual disk.
const shmDir = "/dev/shm"

// clusterBase returns the folder to create the test cluster in: shmDir when it is a tmpfs
// with room to spare (Docker's default 64 MB is too small), else "" for os.TempDir().
func clusterBase() string {
	const tmpfsMagic = 0x01021994
	const room = 2 << 30
	var st syscall.Statfs_t
	if err := syscall.Statfs(shmDir, &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	if uint64(st.Bavail)*uint64(st.Bsize) < room {
		return ""
	}
	if err := syscall.Access(shmDir, 0o2|0o1); err != nil { // W_OK|X_OK
		return ""
	}
	return shmDir
}
