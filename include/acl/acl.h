/*
 * mlaops drop-in for CANN's acl/acl.h (the runtime umbrella header).
 */
#ifndef MLAOPS_ACL_ACL_H_
#define MLAOPS_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#endif /* MLAOPS_ACL_ACL_H_ */
