package wire_test

import (
	"errors"
	"fmt"

	"github.com/distbench/distbench/internal/wire"
)

func ExampleDecodeHeader() {
	var b [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindData, Tag: 42, Length: 1 << 20}.Encode(&b)

	h, err := wire.DecodeHeader(&b, 64<<20)
	fmt.Println(h.Kind, h.Tag, h.Length, err)

	// A length over the limit fails before anyone allocates for it.
	_, err = wire.DecodeHeader(&b, 1<<10)
	fmt.Println(errors.Is(err, wire.ErrTooLarge))
	// Output:
	// data 42 1048576 <nil>
	// true
}
