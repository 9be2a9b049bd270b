// Package kueue only makes sigs.k8s.io/kueue a real requirement of this
// module, so that go.mod/go.sum pin the release whose CRDs the tests install.
// It is never built into anything.
package kueue

import (
	_ "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)
