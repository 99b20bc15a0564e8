package main

import (
	"testing"

	"github.com/trueup-dev/trueup/internal/pgembed/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
