package v1alpha1

//go:generate ../../hack/generate.sh
