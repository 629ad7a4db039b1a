//go:build updatetestdata

package jfr

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
)

// busyJava runs, for RUN_MS, threads that each spend their CPU in one
// place the profile categorizes: "spin" in plain Java, "crc32c" in
// java.util.zip.CRC32C, "md5" in MessageDigest MD5, "aes-gcm" in
// AES/GCM/NoPadding, "deflate" in java.util.zip.Deflater (native zlib),
// and "mixed" alternating Deflater and as long in plain Java, measuring
// how long each took. Three "contender-N" threads take turns holding a Busy$Lock
// for 20 ms; four "idle-selector-N" threads sit in Selector.select (a
// native epoll_wait). At the end it prints "mixed JAVA_NS NATIVE_NS".
const busyJava = `import java.nio.channels.Selector;
import java.security.MessageDigest;
import java.util.zip.CRC32C;
import java.util.zip.Deflater;
import javax.crypto.Cipher;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public class Busy {
    static final class Lock {}
    static final Lock LOCK = new Lock();
    static volatile boolean stop;
    static volatile long sink;

    static long spin(long n) {
        long x = n;
        for (long i = 0; i < n; i++) x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    static byte[] data(int n) {
        byte[] b = new byte[n];
        long x = 1;
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005L + 1442695040888963407L;
            b[i] = (byte) ("kafka broker partition segment ".charAt((int) ((x >>> 33) % 31)));
        }
        return b;
    }

    static Thread worker(String name, Runnable r) {
        Thread t = new Thread(() -> { while (!stop) r.run(); }, name);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        long runMs = Long.parseLong(args[0]);
        for (int i = 0; i < 4; i++) {
            Selector s = Selector.open();
            Thread t = new Thread(() -> { try { s.select(); } catch (Exception e) { } }, "idle-selector-" + i);
            t.setDaemon(true);
            t.start();
        }
        byte[] buf = data(64 << 10);
        byte[] out = new byte[128 << 10];
        long[] mixed = new long[2];
        Thread[] ts = {
            worker("spin", () -> sink = spin(100_000)),
            worker("crc32c", () -> { CRC32C c = new CRC32C(); c.update(buf); sink = c.getValue(); }),
            worker("md5", () -> { try { sink = MessageDigest.getInstance("MD5").digest(buf)[0]; } catch (Exception e) { throw new RuntimeException(e); } }),
            worker("aes-gcm", new Runnable() {
                final SecretKeySpec key = new SecretKeySpec(new byte[16], "AES");
                final byte[] iv = new byte[12];
                long n;
                public void run() {
                    try {
                        n++;
                        for (int i = 0; i < 8; i++) iv[i] = (byte) (n >>> (8 * i));
                        Cipher c = Cipher.getInstance("AES/GCM/NoPadding");
                        c.init(Cipher.ENCRYPT_MODE, key, new GCMParameterSpec(128, iv));
                        sink = c.doFinal(buf).length;
                    } catch (Exception e) { throw new RuntimeException(e); }
                }
            }),
            worker("deflate", () -> { Deflater d = new Deflater(6); d.setInput(buf); d.finish(); sink = d.deflate(out); d.end(); }),
            worker("mixed", () -> {
                long t0 = System.nanoTime();
                Deflater d = new Deflater(6); d.setInput(buf); d.finish(); sink = d.deflate(out); d.end();
                long t1 = System.nanoTime();
                // As long in plain Java as in zlib.
                for (long until = t1 + (t1 - t0); System.nanoTime() < until; ) sink = spin(10_000);
                long t2 = System.nanoTime();
                mixed[0] += t2 - t1;
                mixed[1] += t1 - t0;
            }),
        };
        for (int i = 0; i < 3; i++) {
            new Thread(() -> {
                while (!stop) {
                    synchronized (LOCK) { try { Thread.sleep(20); } catch (InterruptedException e) { } }
                }
            }, "contender-" + i).start();
        }
        Thread.sleep(runMs);
        stop = true;
        for (Thread t : ts) t.join();
        System.out.println("mixed " + mixed[0] + " " + mixed[1]);
    }
}
`

// TestProfileTestdata rewrites testdata/busy.jfr.gz, a recording of
// Busy.java with ProfileSettings, and testdata/busy.want.json, the JDK jfr
// tool's view of it: `go test -tags updatetestdata -run TestProfileTestdata
// ./internal/jfr`. Not part of the normal run.
func TestProfileTestdata(t *testing.T) {
	dir := t.TempDir()
	java, err := lab.JavaPath()
	if err != nil {
		t.Fatal(err)
	}
	javac, err := hostinfo.JDKTool("javac")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Busy.java"), []byte(busyJava), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(javac, "-d", dir, filepath.Join(dir, "Busy.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v: %s", err, out)
	}
	jfc := filepath.Join(dir, "profile.jfc")
	if err := os.WriteFile(jfc, ProfileSettings(ProfileOptions{}), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "busy.jfr")
	cmd := exec.Command(java, "-Xmx64m", "-XX:StartFlightRecording=filename="+path+",settings="+jfc, "-cp", dir, "Busy", "3000")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("Busy: %v: %s", err, out)
	}
	t.Logf("Busy: %s", strings.TrimSpace(string(out)))
	want := jfrPrintProfile(t, path)
	for _, l := range strings.Split(string(out), "\n") { // after JFR's own notes
		if strings.HasPrefix(l, "mixed ") {
			want.Mixed = strings.TrimSpace(l)
		}
	}
	if want.Mixed == "" {
		t.Fatalf("Busy printed no mixed line: %s", out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join("testdata", "busy.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(want, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "busy.want.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes, %d samples, %d thread CPU loads written to testdata", len(data), len(want.Samples), len(want.ThreadCPU))
}

// jfrPrintProfile is what the JDK's jfr tool prints of path, in the form
// of profileWant.
func jfrPrintProfile(t *testing.T, path string) *profileWant {
	t.Helper()
	bin, err := hostinfo.JDKTool("jfr")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "print", "--json", "--stack-depth", "3", "--events",
		"jdk.ExecutionSample,jdk.NativeMethodSample,jdk.ThreadCPULoad,jdk.CPULoad,jdk.GarbageCollection,jdk.JavaMonitorEnter", path).Output()
	if err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	type jthread struct {
		OSThreadID int    `json:"osThreadId"`
		JavaName   string `json:"javaName"`
	}
	var doc struct {
		Recording struct {
			Events []struct {
				Type   string `json:"type"`
				Values struct {
					StartTime     time.Time `json:"startTime"`
					SampledThread *jthread  `json:"sampledThread"`
					EventThread   *jthread  `json:"eventThread"`
					StackTrace    *struct {
						Frames []struct {
							Method struct {
								Type struct {
									Name string `json:"name"`
								} `json:"type"`
								Name string `json:"name"`
							} `json:"method"`
						} `json:"frames"`
					} `json:"stackTrace"`
					User         float64 `json:"user"`
					System       float64 `json:"system"`
					JVMUser      float64 `json:"jvmUser"`
					JVMSystem    float64 `json:"jvmSystem"`
					MachineTotal float64 `json:"machineTotal"`
					LongestPause string  `json:"longestPause"`
				} `json:"values"`
			} `json:"events"`
		} `json:"recording"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("jfr print: %v", err)
	}
	w := &profileWant{}
	for _, e := range doc.Recording.Events {
		v := e.Values
		switch e.Type {
		case "jdk.ExecutionSample", "jdk.NativeMethodSample":
			s := sampleWant{Time: v.StartTime.UTC(), TID: v.SampledThread.OSThreadID, Thread: v.SampledThread.JavaName, Native: e.Type == "jdk.NativeMethodSample"}
			if v.StackTrace != nil {
				for _, f := range v.StackTrace.Frames {
					s.Top = append(s.Top, strings.ReplaceAll(f.Method.Type.Name, "/", ".")+"."+f.Method.Name)
				}
			}
			w.Samples = append(w.Samples, s)
		case "jdk.ThreadCPULoad":
			w.ThreadCPU = append(w.ThreadCPU, threadCPUWant{Time: v.StartTime.UTC(), TID: v.EventThread.OSThreadID, User: v.User, System: v.System})
		case "jdk.CPULoad":
			w.CPULoad = append(w.CPULoad, cpuLoadWant{Time: v.StartTime.UTC(), JVMUser: v.JVMUser, JVMSystem: v.JVMSystem, MachineTotal: v.MachineTotal})
		case "jdk.GarbageCollection":
			w.GCs++
		case "jdk.JavaMonitorEnter":
			w.MonitorEnters++
		}
	}
	slices.SortStableFunc(w.Samples, func(a, b sampleWant) int { return a.Time.Compare(b.Time) })
	return w
}
