package bench

import (
	"bytes"
	"compress/gzip"
	"math"
	"math/rand/v2"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		spec    string
		want    sizeDist
		wantErr bool
	}{
		{"1024", sizeDist{1024, 1024}, false},
		{"0", sizeDist{0, 0}, false},
		{"uniform:100-2000", sizeDist{100, 2000}, false},
		{"uniform:5-5", sizeDist{5, 5}, false},
		{"uniform:2000-100", sizeDist{}, true},
		{"uniform:100", sizeDist{}, true},
		{"-1", sizeDist{}, true},
		{"1k", sizeDist{}, true},
		{"99999999", sizeDist{}, true},
		{"normal:5", sizeDist{}, true},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.spec)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseSize(%q) = %v, %v; want %v, err %v", tt.spec, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPayloadSizes(t *testing.T) {
	tests := []struct {
		size sizeDist
	}{{sizeDist{1024, 1024}}, {sizeDist{100, 2000}}, {sizeDist{0, 3}}, {sizeDist{5 << 20, 5 << 20}}}
	for _, tt := range tests {
		p := newPayloads(tt.size, 0.5, 1)
		rng := rand.New(rand.NewPCG(1, 2))
		var sum float64
		const n = 20000
		lo, hi := math.MaxInt, 0
		for i := 0; i < n; i++ {
			v := p.next(rng)
			lo, hi = min(lo, len(v)), max(hi, len(v))
			sum += float64(len(v))
			if cap(v) != len(v) {
				t.Fatalf("payload has spare capacity %d: an append could write into the shared pool", cap(v)-len(v))
			}
		}
		if lo < tt.size.min || hi > tt.size.max {
			t.Errorf("%v: sizes %d..%d out of range", tt.size, lo, hi)
		}
		mean, want := sum/n, float64(tt.size.min+tt.size.max)/2
		if math.Abs(mean-want) > 0.02*want+0.1 {
			t.Errorf("%v: mean size %.1f, want ~%.1f", tt.size, mean, want)
		}
	}
}

// The compressibility asked for is what a compressor finds in a batch of
// payloads: gzip shrinks them to about (1 - compressibility).
func TestPayloadCompressibility(t *testing.T) {
	for _, c := range []float64{0, 0.25, 0.5, 0.75, 0.9, 1} {
		for _, size := range []sizeDist{{1024, 1024}, {100, 2000}} {
			p := newPayloads(size, c, 7)
			rng := rand.New(rand.NewPCG(3, 4))
			var batch bytes.Buffer
			for batch.Len() < 1<<20 {
				batch.Write(p.next(rng))
			}
			var z bytes.Buffer
			w := gzip.NewWriter(&z)
			w.Write(batch.Bytes())
			w.Close()
			ratio := float64(z.Len()) / float64(batch.Len())
			if want := 1 - c; math.Abs(ratio-want) > 0.06 {
				t.Errorf("compressibility %.2f, sizes %v: gzip ratio %.3f, want ~%.2f", c, size, ratio, want)
			} else {
				t.Logf("compressibility %.2f, sizes %v: gzip ratio %.3f", c, size, ratio)
			}
		}
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		spec    string
		want    keyDist
		wantErr bool
	}{
		{"none", keyDist{mode: keysNone}, false},
		{"round-robin", keyDist{mode: keysRoundRobin, n: 10}, false},
		{"uniform", keyDist{mode: keysUniform, n: 10}, false},
		{"hot:0.9", keyDist{mode: keysHot, n: 10, hot: 0.9}, false},
		{"hot:1", keyDist{mode: keysHot, n: 10, hot: 1}, false},
		{"hot:0", keyDist{}, true},
		{"hot:1.5", keyDist{}, true},
		{"hot:", keyDist{}, true},
		{"zipf", keyDist{}, true},
	}
	for _, tt := range tests {
		got, err := parseKeys(tt.spec, 10)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseKeys(%q) = %+v, %v; want %+v, err %v", tt.spec, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestKeyDistributions(t *testing.T) {
	const n = 200000
	tests := []struct {
		spec     string
		space    int
		check    func(t *testing.T, counts map[string]int)
		nilCount int // messages without a key
	}{
		{spec: "none", space: 8, nilCount: n, check: func(t *testing.T, c map[string]int) {}},
		{spec: "round-robin", space: 8, check: func(t *testing.T, c map[string]int) {
			for k, v := range c {
				if v != n/8 {
					t.Errorf("round-robin: key %s %d times, want exactly %d", k, v, n/8)
				}
			}
		}},
		{spec: "uniform", space: 8, check: func(t *testing.T, c map[string]int) {
			for k, v := range c {
				if math.Abs(float64(v)-n/8) > 0.03*n/8 {
					t.Errorf("uniform: key %s %d times, want ~%d", k, v, n/8)
				}
			}
		}},
		{spec: "hot:0.9", space: 11, check: func(t *testing.T, c map[string]int) {
			if f := float64(c["key-00000000"]) / n; math.Abs(f-0.9) > 0.005 {
				t.Errorf("hot:0.9: hot key has %.3f of the messages", f)
			}
			for k, v := range c {
				if k != "key-00000000" && math.Abs(float64(v)-0.01*n) > 0.15*0.01*n {
					t.Errorf("hot:0.9: cold key %s %d times, want ~%d", k, v, n/100)
				}
			}
		}},
		{spec: "hot:0.5", space: 1, check: func(t *testing.T, c map[string]int) {
			if c["key-00000000"] != n {
				t.Errorf("hot with one key: %v", c)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			d, err := parseKeys(tt.spec, tt.space)
			if err != nil {
				t.Fatal(err)
			}
			k := newKeys(d)
			rng := rand.New(rand.NewPCG(5, 6))
			counts := map[string]int{}
			nils := 0
			for i := 0; i < n; i++ {
				key := k.next(rng, uint64(i))
				if key == nil {
					nils++
					continue
				}
				counts[string(key)]++
			}
			if nils != tt.nilCount {
				t.Errorf("%d messages without a key, want %d", nils, tt.nilCount)
			}
			if tt.nilCount == 0 && len(counts) != tt.space {
				t.Errorf("%d distinct keys, want %d", len(counts), tt.space)
			}
			tt.check(t, counts)
		})
	}
}
