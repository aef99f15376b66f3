package nn

import (
	"fmt"
	"math"
)

// Loss turns a net's output and integer class labels into a scalar, the
// mean over the batch, and its gradient.
type Loss interface {
	// Forward returns the mean loss of out ([N, K]) against labels (N).
	Forward(out *Tensor, labels []int) float32
	// Backward returns the gradient of the last Forward's loss with respect
	// to out; the tensor is owned by the loss.
	Backward() *Tensor
}

// NLLLoss is the negative log-likelihood of log-probabilities, torch's
// F.nll_loss with mean reduction; pair it with a final [LogSoftmax].
type NLLLoss struct {
	grad   *Tensor
	labels []int
	shape  []int
}

func (l *NLLLoss) Forward(logp *Tensor, labels []int) float32 {
	n, k := checkLoss("NLLLoss", logp, labels)
	var s float64
	for i, y := range labels {
		s -= float64(logp.Data[i*k+y])
	}
	l.labels = append(l.labels[:0], labels...)
	l.shape = append(l.shape[:0], n, k)
	return float32(s / float64(n))
}

func (l *NLLLoss) Backward() *Tensor {
	n, k := l.shape[0], l.shape[1]
	l.grad = ensure(l.grad, n, k)
	clear(l.grad.Data)
	for i, y := range l.labels {
		l.grad.Data[i*k+y] = -1 / float32(n)
	}
	return l.grad
}

// CrossEntropyLoss is softmax followed by negative log-likelihood on raw
// logits, torch's nn.CrossEntropyLoss with mean reduction; fused, its
// gradient is (softmax − one-hot)/N.
type CrossEntropyLoss struct {
	prob   *Tensor // softmax of the last Forward's logits
	grad   *Tensor
	labels []int
}

func (l *CrossEntropyLoss) Forward(logits *Tensor, labels []int) float32 {
	n, k := checkLoss("CrossEntropyLoss", logits, labels)
	l.prob = ensure(l.prob, n, k)
	var s float64
	for i, y := range labels {
		row := l.prob.Data[i*k : (i+1)*k]
		logSoftmaxRow(logits.Data[i*k:(i+1)*k], row)
		s -= float64(row[y])
		for j, v := range row {
			row[j] = float32(math.Exp(float64(v)))
		}
	}
	l.labels = append(l.labels[:0], labels...)
	return float32(s / float64(n))
}

func (l *CrossEntropyLoss) Backward() *Tensor {
	n, k := l.prob.Shape[0], l.prob.Shape[1]
	l.grad = ensure(l.grad, n, k)
	inv := 1 / float32(n)
	for i, v := range l.prob.Data {
		l.grad.Data[i] = v * inv
	}
	for i, y := range l.labels {
		l.grad.Data[i*k+y] -= inv
	}
	return l.grad
}

func checkLoss(name string, out *Tensor, labels []int) (n, k int) {
	if len(out.Shape) != 2 || out.Shape[0] != len(labels) {
		panic(fmt.Sprintf("nn: %s: output shape %v for %d labels, want [%d K]", name, out.Shape, len(labels), len(labels)))
	}
	n, k = out.Shape[0], out.Shape[1]
	for i, y := range labels {
		if y < 0 || y >= k {
			panic(fmt.Sprintf("nn: %s: label %d of sample %d outside [0, %d)", name, y, i, k))
		}
	}
	return n, k
}

// Correct counts the rows of out ([N, K]) whose largest entry is at the
// label's index (ties go to the lowest index, as torch's argmax).
func Correct(out *Tensor, labels []int) int {
	k := out.Shape[len(out.Shape)-1]
	c := 0
	for i, y := range labels {
		row := out.Data[i*k : (i+1)*k]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if best == y {
			c++
		}
	}
	return c
}
