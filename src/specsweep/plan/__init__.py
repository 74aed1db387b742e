"""Plan: the configuration, its checks, the designed sweep (configurations, factors, order, load levels,
workloads, the engine environment), and every check made before anything is built or launched."""
