package compare

import "math"

// The binomial pieces of the exceedance test. Counts may be fractional:
// the test works on effective counts (a count divided by its design
// effect), and the binomial distribution extends to real counts through
// the regularized incomplete beta function, P(X ≥ k) = I_p(k, n−k+1).

// binomialUpper is P(X ≥ k) for X ~ Binomial(n, p), k and n real.
func binomialUpper(k, n, p float64) float64 {
	switch {
	case k <= 0:
		return 1
	case k > n:
		return 0
	case p <= 0:
		return 0
	case p >= 1:
		return 1
	}
	return betaInc(k, n-k+1, p)
}

// binomialLower is P(X ≤ k).
func binomialLower(k, n, p float64) float64 {
	return 1 - binomialUpper(k+1, n, p)
}

// exactBinomialTest is the two-sided p-value of observing x of n under
// Binomial(n, p): twice the smaller tail, at most 1.
func exactBinomialTest(x, n, p float64) float64 {
	if n <= 0 {
		return 1
	}
	return min(1, 2*min(binomialUpper(x, n, p), binomialLower(x, n, p)))
}

// wilson is the Wilson score interval of a proportion x/n at the normal
// quantile z: it stays inside [0, 1] and is sensible at x = 0, where the
// Wald interval collapses to a point.
func wilson(x, n, z float64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	p := x / n
	z2 := z * z
	den := 1 + z2/n
	mid := (p + z2/(2*n)) / den
	half := z / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max(0, mid-half), min(1, mid+half)
}

// betaInc is the regularized incomplete beta function I_x(a, b), by the
// continued fraction (Lentz's method) on the side where it converges
// fast.
func betaInc(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const (
		maxIter = 10000
		eps     = 1e-15
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < lentzTiny {
		d = lentzTiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// The even and the odd step of the fraction.
		c, d = lentz(fm*(b-fm)*x/((qam+m2)*(a+m2)), c, d)
		h *= d * c
		c, d = lentz(-(a+fm)*(qab+fm)*x/((a+m2)*(qap+m2)), c, d)
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}

// lentzTiny keeps Lentz's method from dividing by zero.
const lentzTiny = 1e-300

// lentz is one step of Lentz's method with coefficient aa: the new c and
// d (already inverted).
func lentz(aa, c, d float64) (float64, float64) {
	d = 1 + aa*d
	if math.Abs(d) < lentzTiny {
		d = lentzTiny
	}
	c = 1 + aa/c
	if math.Abs(c) < lentzTiny {
		c = lentzTiny
	}
	return c, 1 / d
}
