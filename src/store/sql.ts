/**
 * SQL shared by every engine. The status rule (PetStatus in openapi.yaml) lives here once:
 * sold at 0, pending when open orders reserve at least the stock, available otherwise.
 */
export const OPEN_ORDER_STATUSES = "('placed', 'approved')"

export function statusExpression (petIdColumn: string, quantityColumn: string): string {
  return `CASE WHEN ${quantityColumn} = 0 THEN 'sold'
    WHEN (SELECT COALESCE(SUM(o.quantity), 0) FROM orders o
          WHERE o.pet_id = ${petIdColumn} AND o.status IN ${OPEN_ORDER_STATUSES}) >= ${quantityColumn} THEN 'pending'
    ELSE 'available' END`
}
