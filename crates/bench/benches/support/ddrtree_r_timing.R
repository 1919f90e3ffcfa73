# Times R DDRTree 0.1.5 on the matrix `ddrtree_perf` writes (DDRTREE_PERF_CSV=path), with the
# settings of that probe: K = N centres (ncenter = NULL), d = 2, 20 iterations (tol = 0),
# sigma (default 1e-3, R's), gamma = 10, lambda = 5 N. Run under /usr/bin/time for the peak RSS:
#   Rscript ddrtree_r_timing.R data.csv [sigma]
suppressMessages(library(DDRTree))
args <- commandArgs(trailingOnly = TRUE)
X <- as.matrix(read.csv(args[1], header = FALSE))
sigma <- if (length(args) >= 2) as.numeric(args[2]) else 1e-3
t <- system.time(fit <- DDRTree(t(X), dimensions = 2, maxIter = 20, sigma = sigma, param.gamma = 10, tol = 0))
cat(sprintf("R DDRTree: N = %d, K = %d, D = %d, sigma = %g, %d objective values: %.2f s elapsed\n",
            nrow(X), ncol(fit$Y), ncol(X), sigma, length(fit$objective_vals), t[["elapsed"]]))
