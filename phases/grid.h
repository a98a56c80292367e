/* The generated grid of layer cases, one row per layer variant (grid.c). */
#ifndef GRID_H
#define GRID_H
#include "shape.h"
/* The row's variant on the grid's cases: the subset, or all with KDN_GRID=full. */
void t_grid(const Test *t, Ctx *c);
#endif
