// The pinned Spotahome Redis operator release that build.sh builds (cmd/redisoperator) and
// whose CRD and install manifest the redis-operator example target deploys. Nothing is
// compiled in this module: build.sh builds the release's own command inside a copy of its
// module.
module github.com/gauntlet-dev/gauntlet/build/redis-operator

go 1.26.0

require github.com/spotahome/redis-operator v1.2.4
